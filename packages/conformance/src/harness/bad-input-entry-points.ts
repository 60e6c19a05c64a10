/**
 * fast-check arbitraries of the bad input issue 35 found past the first bad-input section,
 * for spec/bad-input-entry-points.ts: session objects made odd without being frozen, and the
 * exported codec helpers' arguments (the memory lifecycle's are in bad-input-lifecycle.ts).
 * Like bad-input-arbitraries.ts, each yields plain data and the value is built in the test.
 */
import type { Session } from '@keepsake/core';
import fc from 'fast-check';
import { badId, nestedObject, POISON_KINDS, poisonValue } from './bad-input-arbitraries.js';
import { notAnObject } from './bad-input-lifecycle.js';

// ── Odd session objects (B4, A4, A1) ────────────────────────────────────────────────────

/**
 * What is done to one field of a session object: made non-configurable (Object.defineProperty's
 * default), read-only, a getter, a getter and setter pair, or hidden from JSON
 * (non-enumerable). None of these makes the object frozen or sealed.
 */
export const ODDITIES = [
  'non-configurable',
  'read-only',
  'getter',
  'accessor-pair',
  'non-enumerable',
] as const;

export type Oddity = (typeof ODDITIES)[number];

/** The session's own fields, and one of the application's own (A4). */
export const ODD_FIELDS = [
  'id',
  'title',
  'createdAt',
  'updatedAt',
  'revision',
  'messages',
  'pending',
  'toolCalls',
  'parentId',
  'rotatedTo',
  'metadata',
  'appField',
] as const;

export type OddField = (typeof ODD_FIELDS)[number];

export interface OddSession {
  field: OddField;
  oddity: Oddity;
  /** The odd object is a copy (a save of it is refused) or the live session itself. */
  inLive: boolean;
  /** An edit made before the save, so it has something to write. */
  edit: 'none' | 'title' | 'metadata';
}

export const oddSession: fc.Arbitrary<OddSession> = fc
  .record({
    field: fc.constantFrom(...ODD_FIELDS),
    oddity: fc.constantFrom(...ODDITIES),
    inLive: fc.boolean(),
    edit: fc.constantFrom('none', 'title', 'metadata'),
  })
  // A non-enumerable field of the application's own is not data (A4): JSON and the store
  // ignore it alike, so it is not odd.
  .filter(({ field, oddity }) => !(field === 'appField' && oddity === 'non-enumerable'));

/** Makes `field` of `session` odd as described; the value it holds stays the same. */
export function makeOdd(session: Session, field: OddField, oddity: Oddity): void {
  const record = session as unknown as Record<string, unknown>;
  const value = field === 'appField' ? 'the application’s own' : record[field];
  let stored = value;
  delete record[field];
  const data = { value, writable: true, enumerable: true, configurable: true };
  switch (oddity) {
    case 'non-configurable':
      Object.defineProperty(record, field, { ...data, configurable: false });
      return;
    case 'read-only':
      Object.defineProperty(record, field, { ...data, writable: false });
      return;
    case 'getter':
      Object.defineProperty(record, field, {
        get: () => value,
        enumerable: true,
        configurable: true,
      });
      return;
    case 'accessor-pair':
      Object.defineProperty(record, field, {
        get: () => stored,
        set: (next: unknown) => {
          stored = next;
        },
        enumerable: true,
        configurable: true,
      });
      return;
    case 'non-enumerable':
      Object.defineProperty(record, field, { ...data, enumerable: false });
      return;
  }
}

// ── The exported codec helpers (A1, A2, A4) ─────────────────────────────────────────────

/**
 * What encodeSessionDocument() must refuse. It serializes a session its schema would refuse
 * (tests plant such documents through it), so only what JSON would not store as it is.
 */
export type BadEncodeInput =
  | { kind: 'not-an-object'; value: unknown }
  | {
      kind: 'poisoned';
      poison: (typeof POISON_KINDS)[number];
      depth: number;
      where: 'metadata' | 'message' | 'top-level';
    };

export const badEncodeInput: fc.Arbitrary<BadEncodeInput> = fc.oneof(
  fc
    .oneof(notAnObject, fc.constant(undefined), fc.constant([]))
    .map((value) => ({ kind: 'not-an-object' as const, value })),
  fc.record({
    kind: fc.constant('poisoned' as const),
    poison: fc.constantFrom(...POISON_KINDS),
    depth: fc.integer({ min: 600, max: 6_000 }),
    where: fc.constantFrom('metadata' as const, 'message' as const, 'top-level' as const),
  }),
);

/** The value an encodeSessionDocument() call is given, from a valid session. */
export function encodeInputOf(bad: BadEncodeInput, session: Session): unknown {
  switch (bad.kind) {
    case 'not-an-object':
      return bad.value;
    case 'poisoned': {
      const poisoned = poisonValue({ kind: bad.poison, depth: bad.depth });
      if (bad.where === 'metadata') return { ...session, metadata: { poisoned } };
      if (bad.where === 'top-level') return { ...session, appField: poisoned };
      const message = { id: 'm2', role: 'user', content: 'x', poisoned };
      return { ...session, messages: [...session.messages, message] };
    }
  }
}

export type BadDecodeInput =
  | { kind: 'expected-id'; id: unknown }
  | { kind: 'stored'; value: 'null' | 'string' | 'cycle' | 'deep' | 'bigint' }
  | { kind: 'base'; value: unknown }
  | { kind: 'deltas'; value: unknown }
  | { kind: 'revision'; value: unknown }
  | { kind: 'now'; value: unknown };

export const badDecodeInput: fc.Arbitrary<BadDecodeInput> = fc.oneof(
  badId.map((id) => ({ kind: 'expected-id' as const, id })),
  fc
    .constantFrom(
      'null' as const,
      'string' as const,
      'cycle' as const,
      'deep' as const,
      'bigint' as const,
    )
    .map((value) => ({ kind: 'stored' as const, value })),
  fc
    .constantFrom<unknown>(5, null, undefined, 1n, {}, ['{}'])
    .map((value) => ({ kind: 'base' as const, value })),
  fc
    .constantFrom<unknown>(null, '{}', [5], [null], {}, [{}])
    .map((value) => ({ kind: 'deltas' as const, value })),
  fc
    .constantFrom<unknown>(-1, 1.5, '1', null, Number.NaN, 1n)
    .map((value) => ({ kind: 'revision' as const, value })),
  fc
    .constantFrom<unknown>(Number.NaN, Number.POSITIVE_INFINITY, -1, '1', null, 1n)
    .map((value) => ({ kind: 'now' as const, value })),
);

/** The arguments of a decodeStoredSession() call, from a valid stored document. */
export function decodeArgumentsOf(
  bad: BadDecodeInput,
  id: string,
  stored: { revision: number; base: string; deltas: string[] },
): [unknown, unknown, unknown] {
  const now = 1_767_225_600_000;
  switch (bad.kind) {
    case 'expected-id':
      return [bad.id, stored, now];
    case 'stored': {
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      const values = {
        null: null,
        string: stored.base,
        cycle,
        deep: nestedObject(6_000),
        bigint: 1n,
      };
      return [id, values[bad.value], now];
    }
    case 'base':
      return [id, { ...stored, base: bad.value }, now];
    case 'deltas':
      return [id, { ...stored, deltas: bad.value }, now];
    case 'revision':
      return [id, { ...stored, revision: bad.value }, now];
    case 'now':
      return [id, stored, bad.value];
  }
}

/** Stored text of any shape: JSON of any kind, text that is not JSON, nesting past any limit. */
export const anyStoredText: fc.Arbitrary<string> = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.string({ maxLength: 60 }),
  fc
    .record({
      depth: fc.integer({ min: 1, max: 6_000 }),
      where: fc.constantFrom('metadata', 'message', 'toolCalls', 'pending', 'extra'),
    })
    .map(({ depth, where }) => deepDocument(depth, where)),
);

/** A session document with one value nested `depth` levels deep at `where`. */
export function deepDocument(depth: number, where: string): string {
  const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const message = '{"id":"m1","role":"user","content":"hi","createdAt":1}';
  const fields: Record<string, string> = {
    metadata: `"messages":[${message}],"metadata":{"x":${deep}}`,
    message: `"messages":[{"id":"m1","role":"user","content":"hi","x":${deep}}]`,
    toolCalls: `"messages":[${message}],"toolCalls":[{"id":"t","name":"n","done":true,"args":${deep}}]`,
    pending: `"messages":[${message}],"pending":{"streamId":"r1","startedAt":1,"attachments":[],"userMessage":{"id":"u","role":"user","content":"q","x":${deep}}}`,
    extra: `"messages":[${message}],"extra":${deep}`,
  };
  return `{"id":"ID","title":"t",${fields[where] ?? fields.metadata}}`;
}
