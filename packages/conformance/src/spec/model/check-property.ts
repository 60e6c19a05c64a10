import fc from 'fast-check';
import type { ModelSettings } from './settings.js';

/**
 * Runs a property in two phases, so a failure is reported in bounded time however large
 * its counterexample: first the runs, stopping at the first failure (no shrinking); then
 * that failure replayed by its seed and path and shrunk for at most `shrinkBudgetMs`. The
 * budget bounds only how small the reported counterexample gets, never whether a run
 * fails. A failure the replay does not reproduce (a race that did not recur) is reported
 * as first found, unshrunk, and so is one whose budget ran out before the replay failed.
 * `fc.timeout` turns a run that hangs into a failure too.
 */
export async function checkWithBoundedShrinking<Ts extends [unknown, ...unknown[]]>(
  property: fc.IAsyncPropertyWithHooks<Ts>,
  settings: ModelSettings,
): Promise<fc.RunDetails<unknown>> {
  const hangGuard = fc.timeout(settings.runTimeoutMs);
  const found = await fc.check(property, {
    ...settings.parameters,
    endOnFailure: true,
    plugins: [hangGuard],
  });
  if (!found.failed || found.counterexamplePath === null) return found;
  const shrunk = await fc.check(property, {
    seed: found.seed,
    path: found.counterexamplePath,
    plugins: [hangGuard, fc.interruptAfterTimeLimit(settings.shrinkBudgetMs)],
  });
  // A shrink phase cut off before its replay failed found nothing to report: keep the first.
  return shrunk.failed && shrunk.counterexample !== null ? shrunk : found;
}
