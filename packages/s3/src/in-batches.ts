/**
 * Maps `items` with at most `concurrency` calls in flight, keeping the order of the
 * results. The first failure rejects once the calls in flight have settled (none is left
 * running unobserved).
 */
export async function inBatches<T, R>(
  items: readonly T[],
  concurrency: number,
  call: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !failed) {
      const index = next++;
      try {
        results[index] = await call(items[index]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, worker);
  const settled = await Promise.allSettled(workers);
  const rejected = settled.find((outcome) => outcome.status === 'rejected');
  if (rejected !== undefined) throw (rejected as PromiseRejectedResult).reason;
  return results;
}
