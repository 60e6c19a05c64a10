import { describe, expect, it } from 'vitest';
import type { Lease } from '../src/file-lock.js';
import { type HeldJournal, IDLE_MS, idleTimerDelay, MAX_HOLD_MS } from '../src/journal-hold.js';

function held(times: { since: number; checkedAt: number; lastUsed: number }): HeldJournal {
  return {
    lease: {} as Lease,
    handle: null,
    tail: {
      lastSequence: 0,
      size: 0,
      covered: 0,
      nonce: null,
      linked: true,
    } as HeldJournal['tail'],
    unapplied: null,
    ...times,
  };
}

describe('an idle journal writer', () => {
  it('E2: acts when it has idled IDLE_MS or a look for waiters is due, whichever is first', () => {
    const now = 10_000;
    expect(idleTimerDelay(held({ since: now, checkedAt: now, lastUsed: now }), now)).toBe(IDLE_MS);
    // Looked 200 ms ago, appended just now: the look is due first.
    expect(
      idleTimerDelay(held({ since: now - 200, checkedAt: now - 200, lastUsed: now }), now),
    ).toBe(51);
    // Looked just now, last append 240 ms ago: letting go is due first.
    expect(
      idleTimerDelay(held({ since: now - 240, checkedAt: now, lastUsed: now - 240 }), now),
    ).toBe(IDLE_MS - 240);
    // Held for almost MAX_HOLD_MS: the look (which lets go) is due in 100 ms.
    const since = now - MAX_HOLD_MS + 100;
    expect(idleTimerDelay(held({ since, checkedAt: now, lastUsed: now }), now)).toBe(101);
    // Held past MAX_HOLD_MS and just failed to let go (lastUsed and checkedAt now): the
    // retry waits its turn instead of firing at once, again and again.
    const long = now - MAX_HOLD_MS - 1_000;
    expect(idleTimerDelay(held({ since: long, checkedAt: now, lastUsed: now }), now)).toBe(IDLE_MS);
    // Overdue: at once.
    expect(idleTimerDelay(held({ since: 0, checkedAt: 0, lastUsed: 0 }), now)).toBe(0);
  });
});
