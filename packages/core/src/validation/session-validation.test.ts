import { describe, expect, it } from 'vitest';
import { type Message, messageSchema, sessionSchema } from './schemas.js';
import { assertWritable, normalizeMessage } from './session-validation.js';

/**
 * The save path checks the common message and head without zod: it must accept exactly
 * what the schemas accept (A4, B4: nothing invalid is written, nothing valid refused).
 */
const plain = { id: 'm1', role: 'user', content: 'hi', createdAt: 1 };
const messages: Array<[string, Record<string, unknown>]> = [
  ['plain', plain],
  ['an extra field of its own', { ...plain, custom: { a: 1 } }],
  ['id with a dot', { ...plain, id: 'm.1' }],
  ['id too long', { ...plain, id: 'x'.repeat(129) }],
  ['empty id', { ...plain, id: '' }],
  ['unknown role', { ...plain, role: 'robot' }],
  ['content parts', { ...plain, content: [{ type: 'text', text: 'a' }] }],
  ['content a number', { ...plain, content: 3 }],
  ['negative time', { ...plain, createdAt: -1 }],
  ['time NaN', { ...plain, createdAt: Number.NaN }],
  ['time a string', { ...plain, createdAt: '1' }],
  ['partial true', { ...plain, partial: true }],
  ['partial a string', { ...plain, partial: 'yes' }],
  ['reasoning a number', { ...plain, reasoning: 1 }],
  ['runId invalid', { ...plain, runId: 'a b' }],
  ['attachments invalid', { ...plain, attachments: [{}] }],
  ['journal invalid', { ...plain, journal: {} }],
  ['marker invalid', { ...plain, marker: 'x' }],
];

function accepted(call: () => unknown): boolean {
  try {
    call();
    return true;
  } catch {
    return false;
  }
}

describe('save-path validation agrees with the schemas', () => {
  it.each(messages)('A4: a message (%s)', (_label, message) => {
    expect(accepted(() => normalizeMessage({ ...message }, 5, 'message'))).toBe(
      messageSchema.safeParse(message).success,
    );
  });

  const head = {
    id: 's1',
    title: '',
    createdAt: 1,
    updatedAt: 2,
    revision: 0,
    messages: [] as Message[],
    pending: null,
    toolCalls: [] as unknown[],
    parentId: null,
    rotatedTo: null,
    metadata: {},
  };
  const heads: Array<[string, Record<string, unknown>]> = [
    ['plain', head],
    ['with metadata', { ...head, metadata: { a: { b: [1] } } }],
    ['metadata an array', { ...head, metadata: [] }],
    ['metadata null', { ...head, metadata: null }],
    ['title a number', { ...head, title: 1 }],
    ['revision fractional', { ...head, revision: 1.5 }],
    ['revision negative', { ...head, revision: -1 }],
    ['parent id', { ...head, parentId: 'p1' }],
    ['parent id invalid', { ...head, parentId: 'p 1' }],
    ['rotatedTo undefined', { ...head, rotatedTo: undefined }],
    ['tool call', { ...head, toolCalls: [{ id: 't', name: 'n' }] }],
    ['tool call invalid', { ...head, toolCalls: [{ id: '' }] }],
    ['updatedAt Infinity', { ...head, updatedAt: Number.POSITIVE_INFINITY }],
  ];
  it.each(heads)('A4: a head (%s)', (_label, candidate) => {
    const session = { ...candidate, messages: [] };
    expect(accepted(() => assertWritable(session as never))).toBe(
      sessionSchema.safeParse(session).success,
    );
  });
});
