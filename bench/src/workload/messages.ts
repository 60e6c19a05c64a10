/**
 * Chat messages of realistic sizes, deterministic so every contender writes the same bytes:
 * a user turn of about 200 characters, an assistant turn of about 1,000.
 */
export type ChatMessage = {
  role: 'user' | 'assistant';
  content: string;
};

/** A message with the id and timestamp an application (or Keepsake) gives it. */
export type PlainMessage = ChatMessage & { id: string; createdAt: number };

const WORDS = [
  'session',
  'durable',
  'journal',
  'the',
  'agent',
  'tool',
  'result',
  'stream',
  'token',
  'restart',
  'a',
  'of',
  'and',
  'answer',
  'question',
  'context',
  'memory',
  'file',
  'disk',
  'write',
];

/** Deterministic pseudo-random text of `length` characters (a linear congruential walk). */
export function text(length: number, seed: number): string {
  let state = (seed * 2_654_435_761) >>> 0;
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    const word = WORDS[state % WORDS.length] as string;
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(' ').slice(0, length);
}

/** The `index`-th message of a conversation: user turns at even indexes. */
export function chatMessage(index: number): ChatMessage {
  const user = index % 2 === 0;
  return { role: user ? 'user' : 'assistant', content: text(user ? 200 : 1_000, index) };
}

/**
 * What an application that stores sessions itself keeps: a JSON document with a head and
 * the messages, each with an id and a timestamp like Keepsake's.
 */
export interface PlainSessionDocument {
  id: string;
  title: string;
  createdAt: number;
  updatedAt: number;
  messages: PlainMessage[];
}

/** The `index`-th message with its id and timestamp: every contender writes the same bytes. */
export function plainMessage(index: number): PlainMessage {
  return {
    id: `m${index.toString(36).padStart(8, '0')}`,
    createdAt: 1_700_000_000_000 + index,
    ...chatMessage(index),
  };
}

export function plainMessages(count: number, offset = 0): PlainMessage[] {
  return Array.from({ length: count }, (_, index) => plainMessage(offset + index));
}

export function plainSession(id: string, messageCount: number): PlainSessionDocument {
  return {
    id,
    title: `Session ${id}`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    messages: plainMessages(messageCount),
  };
}
