/**
 * A small deterministic generator (mulberry32): numbers in [0, 1) that follow from one
 * 32-bit seed, so a randomized test that prints its seed can be replayed exactly. For test
 * choices only (which step, which worker dies when), never for anything secret.
 * `harness/stream-worker.ts` keeps its own copy: it runs as a script of its own and imports
 * nothing relative.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 2 ** 32;
  };
}
