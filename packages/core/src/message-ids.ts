import type { Message } from './schemas.js';

/**
 * B5: the message ids of a stored transcript, kept from one save to the next so a save that
 * appends k messages checks their ids against the transcript in O(k) rather than by reading
 * the id of every stored message (on a 10,000-message session that read cost more than the
 * rest of the save's checks together).
 *
 * A record is keyed by the last message object of the transcript it describes, which it
 * holds as the stored array the save started from (`base`, an array the store made and
 * never changes) plus the messages the save appended: it is trusted only for a stored array
 * holding exactly those objects (one pointer compare per message; no message is read and
 * nothing is copied), so a stale or borrowed record (a write that failed, a renamed session
 * sharing message objects) is never believed, only rebuilt. Positions are hints: an id found
 * at a position where the transcript holds another id is settled by reading the transcript.
 * Building the positions of a long transcript costs about as much as reading it in full a
 * few dozen times; that happens once per loaded session and on saves that do not only append.
 */
interface KnownIds {
  readonly base: readonly Message[];
  readonly appended: readonly Message[];
  /** id → position (ids a write that failed had added are hints only). */
  readonly positions: Map<string, number>;
}

const knownByLastMessage = new WeakMap<object, KnownIds>();

function messageAt(known: KnownIds, position: number): Message | undefined {
  return position < known.base.length
    ? known.base[position]
    : known.appended[position - known.base.length];
}

/** The record of `stored` if one describes exactly this transcript, else null. */
export function knownIdsOf(stored: readonly Message[]): KnownIds | null {
  const last = stored.at(-1);
  if (typeof last !== 'object' || last === null) return null;
  const known = knownByLastMessage.get(last);
  if (known === undefined) return null;
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
  messages: readonly Message[],
  stored: readonly Message[],
  known: KnownIds | null,
): void {
  const previousLast = stored.at(-1);
  if (typeof previousLast === 'object' && previousLast !== null) {
    knownByLastMessage.delete(previousLast);
  }
  const last = messages.at(-1);
  if (typeof last !== 'object' || last === null) return;
  if (known !== null) {
    for (let index = stored.length; index < messages.length; index++) {
      known.positions.set((messages[index] as Message).id, index);
    }
    knownByLastMessage.set(last, {
      base: stored,
      appended: messages.slice(stored.length),
      positions: known.positions,
    });
    return;
  }
  const positions = new Map<string, number>();
  for (let index = 0; index < messages.length; index++) {
    positions.set((messages[index] as Message).id, index);
  }
  knownByLastMessage.set(last, { base: [], appended: messages.slice(), positions });
}
