/**
 * B7, a listing that need not read every changed document: how far the summary a session
 * document carries may be ahead of the document's LastModified (the server's clock).
 *
 * A summary's updatedAt is the writer's clock when it saved; LastModified is the server's
 * clock when the PUT arrived, later. So updatedAt ≤ LastModified + this allowance holds for
 * any writer whose clock is less than about 3 s ahead of the server's (the rest is the
 * whole seconds of the `Date` header and of LastModified on some servers). A writer that
 * cannot show it holds (a clock further ahead, a reply whose `Date` was lost) writes the
 * index entry of its save at once, a second PUT (see DocumentStore), so the listing knows
 * that session's updatedAt without asking its document.
 *
 * A listing then reads the changed documents newest LastModified first and stops once the
 * page is full and no document left can carry a summary newer than the page's last entry.
 * The same constant on every process sharing a prefix: it is not an option, because a
 * listing with a smaller allowance than its writers' could leave a session off its page.
 */
export const CLOCK_ALLOWANCE_MS = 5_000;

/**
 * Whether a save of the summary at `updatedAt`, whose PUT the server received no earlier
 * than `serverTimeAtSend` (see PutOutcome), is within the allowance: its document's
 * LastModified, even listed in whole seconds, is then above `updatedAt - CLOCK_ALLOWANCE_MS`.
 */
export function withinClockAllowance(updatedAt: number, serverTimeAtSend: number | null): boolean {
  return serverTimeAtSend !== null && updatedAt <= serverTimeAtSend - 1_000 + CLOCK_ALLOWANCE_MS;
}
