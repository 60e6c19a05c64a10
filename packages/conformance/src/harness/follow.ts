/**
 * Following a run in the conformance tests (E9): to its end, collecting every item, and the
 * shared clock moved on until a follow that waits for a repair (F1) settles.
 */
import type { FollowRunItem, JournalRecord, RunEnding, SessionStore } from '@keepsake/core';
import type { TestEnvironment } from './environment.js';
import { PAST_GRACE_MS } from './quiet-worker.js';

export interface Followed {
  records: JournalRecord[];
  items: FollowRunItem[];
  ending: RunEnding | null;
}

/** Follows to the end (or until `signal` aborts), collecting every item. */
export async function follow(
  store: SessionStore,
  sessionId: string,
  runId: string,
  after = 0,
  signal?: AbortSignal,
): Promise<Followed> {
  const followed: Followed = { records: [], items: [], ending: null };
  const options = signal === undefined ? { after } : { after, signal };
  for await (const item of store.followRun(sessionId, runId, options)) {
    followed.items.push(item);
    if (item.kind === 'record') followed.records.push(item.record);
    if (item.kind === 'end') followed.ending = item.ending;
  }
  return followed;
}

/** Keeps moving the shared clock on until `following` settles (a repair waits for grace). */
export async function advanceUntil(
  env: TestEnvironment,
  following: Promise<unknown>,
): Promise<void> {
  let settled = false;
  void following.finally(() => {
    settled = true;
  });
  while (!settled) {
    await env.clock.advance(PAST_GRACE_MS);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
