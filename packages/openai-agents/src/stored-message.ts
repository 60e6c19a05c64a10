import { type Message, randomId } from '@keepsake/core';
import type { AgentInputItem } from '@openai/agents-core';
import { decodeItem, roleOfItem, type StoredItem, textOfItem } from './item-codec.js';

/**
 * The Keepsake message field that holds the Agents SDK items a message stands for (encoded by
 * item-codec.ts). Its presence marks a message this package wrote. A message holds one item,
 * except the user turn of a streamed run, which holds every item of the run's input (one
 * Keepsake message, so a crash never keeps half of a turn's input).
 */
export const ITEMS_FIELD = 'agentItems';

/**
 * F1, F4: an empty assistant message this package adds while a streamed run is live, whose
 * journal tag tells core's crash repair which streamed text is already in the history as
 * items (so it is not added a second time as recovered text). Holds no item.
 */
export const ANCHOR_FIELD = 'agentAnchor';

/** A Keepsake message holding `items` (already encoded), with its text and role for Keepsake's tools. */
export function messageOfItems(
  stored: StoredItem[],
  items: readonly AgentInputItem[],
  now: number,
  id: string = randomId(),
): Message {
  const first = items[0];
  const role = first === undefined ? 'user' : roleOfItem(first);
  return {
    id,
    role,
    content: items.map(textOfItem).join(''),
    createdAt: now,
    [ITEMS_FIELD]: stored,
  } as Message;
}

/** The stored items of a message this package wrote, or null for any other message. */
export function storedItemsOf(message: Message): StoredItem[] | null {
  const items = (message as Record<string, unknown>)[ITEMS_FIELD];
  return Array.isArray(items) ? (items as StoredItem[]) : null;
}

/**
 * How many history items a message stands for, without decoding them: its items, or one for a
 * message core wrote (a crashed or cancelled turn's recovered text, its marker) or other code
 * wrote with text, or none (an anchor, an empty message).
 */
export function itemCountOf(message: Message): number {
  const stored = storedItemsOf(message);
  if (stored !== null) return stored.length;
  return visibleTextItemOf(message) === null ? 0 : 1;
}

/** The history items a message stands for, decoded (fresh objects). */
export function itemsOfMessage(message: Message): AgentInputItem[] {
  const stored = storedItemsOf(message);
  if (stored !== null) return stored.map(decodeItem);
  const item = visibleTextItemOf(message);
  return item === null ? [] : [item];
}

/**
 * A message that this package did not write, as a history item:
 * - a marker (a turn cancelled, failed or cut by a crash, E6, F1) is a system message with its
 *   text, so the model knows the answer above it was not finished;
 * - the text core recovered from a run's journal (F1), or kept of a cancelled run (E6), is an
 *   assistant message with status `incomplete`;
 * - other code's messages become user, system or assistant messages with their text.
 */
function visibleTextItemOf(message: Message): AgentInputItem | null {
  const text = textOf(message);
  if (message.marker !== undefined) return { type: 'message', role: 'system', content: text };
  if (text.length === 0) return null;
  if (message.role === 'user') return { type: 'message', role: 'user', content: text };
  if (message.role === 'system') return { type: 'message', role: 'system', content: text };
  if (message.role === 'tool') return null;
  const unfinished =
    message.partial === true || message.recovered === true || message.journal !== undefined;
  return {
    type: 'message',
    role: 'assistant',
    status: unfinished ? 'incomplete' : 'completed',
    content: [{ type: 'output_text', text }],
  } as AgentInputItem;
}

function textOf(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** The history of a session's transcript: the last `limit` items (all when undefined), in order. */
export function historyOf(messages: readonly Message[], limit?: number): AgentInputItem[] {
  if (limit === undefined) return messages.flatMap(itemsOfMessage);
  if (limit <= 0) return [];
  const collected: AgentInputItem[][] = [];
  let count = 0;
  for (let index = messages.length - 1; index >= 0 && count < limit; index--) {
    const items = itemsOfMessage(messages[index]!);
    if (items.length === 0) continue;
    const wanted = Math.min(items.length, limit - count);
    collected.push(items.slice(items.length - wanted));
    count += wanted;
  }
  return collected.reverse().flat();
}

/** A title for listings: the start of the first user text. */
export function titleOfItems(items: readonly AgentInputItem[]): string {
  for (const item of items) {
    if (roleOfItem(item) !== 'user') continue;
    const text = textOfItem(item).trim().replace(/\s+/g, ' ');
    if (text.length > 0) return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  }
  return '';
}
