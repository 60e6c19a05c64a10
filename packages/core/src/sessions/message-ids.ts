import type { Message } from '../validation/schemas.js';

/**
 * B5: the message ids of a stored transcript, kept from one save to the next so a save that
 * appends k messages checks their ids against the transcript in O(k) rather than by reading
 * the id of every stored message (on a 10,000-message session that read cost more than the
 * rest of the save's checks together).
 *
 * A record is kept by the session's cache entry (`KnownIdsHolder`; a WeakMap keyed by message
 * objects cost a save more than the rest of this record, and its ephemerons slowed every
 * garbage collection). It holds the stored array the save started from (`base`, an array the
 * store made and never changes) plus the messages the save appended: it is trusted only for
 * the very array that save stored (`transcript`, one compare), or else for a stored array
 * holding exactly those objects (one pointer compare per message; no message is read and
 * nothing is copied), so a stale record (a write that failed) is never believed, only
 * rebuilt. Positions are hints: an id found at a position where the transcript holds
 * another id is settled by reading the transcript.
 * Building the positions of a long transcript costs about as much as reading it in full a
 * few dozen times; that happens once per loaded session and on saves that do not only append.
 */
interface KnownIds {
  readonly base: readonly Message[];
  readonly appended: readonly Message[];
  /** id → position (ids a write that failed had added are hints only). */
  readonly positions: Map<string, number>;
  /**
   * The stored array the save that made this record wrote (`rememberTranscript`): a copy of
   * base and appended, made by the store and never changed. A stored array that is this very
   * array is known without comparing a message (a save on a long session then walks its
   * transcript once, not twice).
   */
  transcript: readonly Message[] | null;
}

/** Where a session's record is kept between saves (its cache entry). */
export interface KnownIdsHolder {
  knownIds?: KnownIds | undefined;
}

function messageAt(known: KnownIds, position: number): Message | undefined {
  return position < known.base.length
    ? known.base[position]
    : known.appended[position - known.base.length];
}

/** The holder's record if it describes exactly the transcript `stored`, else null. */
export function knownIdsOf(holder: KnownIdsHolder, stored: readonly Message[]): KnownIds | null {
  const known = holder.knownIds;
  if (known === undefined || stored.length === 0) return null;
  if (known.transcript === stored) return known;
  const { base, appended } = known;
  if (base.length + appended.length !== stored.length) return null;
  for (let index = 0; index < base.length; index++) {
    if (base[index] !== stored[index]) return null;
  }
  for (let index = 0; index < appended.length; index++) {
    if (appended[index] !== stored[base.length + index]) return null;
  }
  return known;
}

/** Whether the transcript `known` describes holds a message with `id`. */
export function knownHolds(known: KnownIds, id: string): boolean {
  const position = known.positions.get(id);
  if (position === undefined) return false;
  if (messageAt(known, position)?.id === id) return true;
  return (
    known.base.some((message) => message.id === id) ||
    known.appended.some((message) => message.id === id)
  );
}

/**
 * Records the ids of `messages`, the transcript a save is about to write, replacing the
 * record of `stored` (one record per session, not one per save). `known` is the verified
 * record of `stored` when `messages` only appends to it: its positions are reused and
 * extended, so the record costs O(appended).
 */
export function rememberIds(
  holder: KnownIdsHolder,
  messages: readonly Message[],
  stored: readonly Message[],
  known: KnownIds | null,
): void {
  if (messages.length === 0) {
    holder.knownIds = undefined;
    return;
  }
  if (known !== null) {
    for (let index = stored.length; index < messages.length; index++) {
      known.positions.set((messages[index] as Message).id, index);
    }
    holder.knownIds = {
      base: stored,
      appended: messages.slice(stored.length),
      positions: known.positions,
      transcript: null,
    };
    return;
  }
  const positions = new Map<string, number>();
  for (let index = 0; index < messages.length; index++) {
    positions.set((messages[index] as Message).id, index);
  }
  holder.knownIds = { base: [], appended: messages.slice(), positions, transcript: null };
}

/**
 * Records that `written`, a copy the store made of the messages the last `rememberIds` call
 * described, is the array that call's record describes (see `transcript`). Call it in the
 * same synchronous step as that `rememberIds`, so no other save's record is mistaken for it.
 */
export function rememberTranscript(holder: KnownIdsHolder, written: readonly Message[]): void {
  const known = holder.knownIds;
  if (known !== undefined && known.base.length + known.appended.length === written.length) {
    known.transcript = written;
  }
}
