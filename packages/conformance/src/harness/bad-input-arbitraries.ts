/**
 * fast-check arbitraries of input a store must refuse, for spec/bad-input-properties.ts.
 * Each arbitrary yields plain data (a kind and its parameters) and the value is built from
 * it in the test: a counterexample then prints as something readable, and values that
 * cannot be shrunk or printed (a cycle, a throwing getter) are still covered.
 */
import { ID_PATTERN } from '@keepsake/core';
import fc from 'fast-check';

// ── Ids (A1) ─────────────────────────────────────────────────────────────────────────────

/** Any value no id may take: strings outside the A1 alphabet or length, and non-strings. */
export const badId: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 140, unit: 'binary' }).filter((text) => !ID_PATTERN.test(text)),
  fc.constantFrom('..', '/', 'a/b', '\\', '\u0000', '*', 'a.b', ' ', 'é', '', 'x'.repeat(129)),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,20}[/\\:.*?\s][A-Za-z0-9_-]{0,5}$/),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  // Falsy values that are not strings are wrong ids, not missing ones (issue 35).
  fc.constantFrom(0, -0, Number.NaN, false, 0n),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }),
);

/** Every call that takes a session or run id, with the bad id in one of its slots. */
export const ID_SLOTS = [
  'create',
  'load',
  'reload',
  'exists',
  'delete',
  'save',
  'rename-old',
  'rename-new',
  'withLock',
  'retainedRevisions',
  'loadRetainedRevision',
  'beginRun-session',
  'beginRun-run',
  'cancelRun-session',
  'cancelRun-run',
  'readJournal-session',
  'readJournal-run',
  'runSummary-session',
  'runSummary-run',
  'listRuns',
] as const;

export type IdSlot = (typeof ID_SLOTS)[number];

// ── Values JSON would not store as they are (A3, A4) ────────────────────────────────────

export const POISON_KINDS = [
  'bigint',
  'cycle',
  'deep',
  'throwing-getter',
  'function',
  'symbol',
  'date',
  'boxed-number',
  'boxed-string',
  'map',
  'set',
  'typed-array',
  'class-instance',
  'to-json',
  'nan',
  'infinity',
  'undefined-in-array',
  'symbol-key',
] as const;

export type PoisonKind = (typeof POISON_KINDS)[number];

export interface Poison {
  kind: PoisonKind;
  /** Levels of nesting for `deep` (always past the 512 a session may hold). */
  depth: number;
}

export const poison: fc.Arbitrary<Poison> = fc.record({
  kind: fc.constantFrom(...POISON_KINDS),
  depth: fc.integer({ min: 600, max: 6_000 }),
});

class Invoice {
  constructor(readonly total: number) {}
}

/** Builds the poisoned value a Poison describes. */
export function poisonValue(description: Poison): unknown {
  switch (description.kind) {
    case 'bigint':
      return 10n ** 20n;
    case 'cycle': {
      const node: Record<string, unknown> = { name: 'node' };
      node.self = { parent: node };
      return node;
    }
    case 'deep':
      return nestedObject(description.depth);
    case 'throwing-getter':
      return {
        get broken(): never {
          throw new Error('this getter throws');
        },
      };
    case 'function':
      return () => 'callback';
    case 'symbol':
      return Symbol('not data');
    case 'date':
      return new Date(0);
    case 'boxed-number':
      return Object(42);
    case 'boxed-string':
      return Object('text');
    case 'map':
      return new Map([['key', 1]]);
    case 'set':
      return new Set([1]);
    case 'typed-array':
      return new Uint8Array([1, 2, 3]);
    case 'class-instance':
      return new Invoice(12);
    case 'to-json':
      return { toJSON: () => 'replacement' };
    case 'nan':
      return Number.NaN;
    case 'infinity':
      return Number.NEGATIVE_INFINITY;
    case 'undefined-in-array':
      return [1, undefined, 3];
    case 'symbol-key':
      // JSON drops a symbol-keyed property without a word (issue 35).
      return { kept: 'plain', [Symbol('note')]: 'dropped' };
  }
}

export function nestedObject(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let current = root;
  for (let level = 1; level < levels; level++) {
    const child: Record<string, unknown> = {};
    current.next = child;
    current = child;
  }
  return root;
}

/** Plain keys to bury a poisoned value under, so the refusal must name a real path. */
export const burial: fc.Arbitrary<string[]> = fc.array(
  fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,7}$/),
  { maxLength: 3 },
);

/** `{ a: { b: value } }` for keys ['a', 'b'], with a plain sibling at each level. */
export function buried(keys: readonly string[], value: unknown): unknown {
  let result = value;
  for (const key of [...keys].reverse()) result = { sibling: 'plain', [key]: result };
  return result;
}

/** Where in a session (or create's input) the poisoned value is put. */
export const POISON_PLACES = [
  'metadata',
  'top-level field',
  'message field',
  'content part',
  'tool call args',
  'create metadata',
  'create message',
] as const;

export type PoisonPlace = (typeof POISON_PLACES)[number];

// ── Pending turns (A1, E1) ──────────────────────────────────────────────────────────────

export type PendingField = 'streamId' | 'attachments' | 'startedAt' | 'userMessage';

/** Which fields are present, with which values; fields left out are missing. */
export type BadPending = Partial<Record<PendingField, unknown>>;

const validUserMessage = {
  id: 'pending-user',
  role: 'user',
  content: 'the question',
  createdAt: 1,
};

const PENDING_FIELDS: readonly PendingField[] = [
  'streamId',
  'attachments',
  'startedAt',
  'userMessage',
];

const VALID_PENDING: Record<PendingField, unknown> = {
  streamId: 'run-valid',
  attachments: [],
  startedAt: 1_767_225_600_000,
  userMessage: validUserMessage,
};

/** For each field: missing (undefined), or a value no run could have written there. */
const BAD_PENDING_VALUES: Record<PendingField, fc.Arbitrary<unknown>> = {
  streamId: fc.oneof(fc.constant(undefined), badId),
  attachments: fc.oneof(
    fc.constant(undefined),
    fc.string({ maxLength: 4 }),
    fc.integer(),
    fc.constant(null),
    fc.constant([{ size: 1 }]),
    fc.constant([{ name: 5 }]),
    fc.constant(['x']),
  ),
  startedAt: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    fc.constant(undefined),
    fc.integer({ max: 0 }),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
    fc.constant('1767225600000'),
    fc.constant(null),
  ),
  userMessage: fc.oneof(
    fc.constant(undefined),
    fc.constantFrom(
      { id: 'u', role: 'robot', content: 'x', createdAt: 1 },
      { id: 'u', role: 'user', content: 5, createdAt: 1 },
      { id: 'a/b', role: 'user', content: 'x', createdAt: 1 },
      'just text',
    ),
  ),
};

/** The pending turn a run writes, for tests that change one field of it. */
export function validPending(): BadPending {
  return { ...VALID_PENDING };
}

/**
 * A pending turn with one or more fields a run could not have written: a stream id that is
 * missing or not an A1 id, attachments that are not a list of attachments, a start time
 * that is missing, not after the epoch or not finite, a user message that is not a message.
 * The other fields are valid, so each bad field is also tried on its own.
 */
export const badPending: fc.Arbitrary<BadPending> = fc
  .oneof(
    { weight: 3, arbitrary: fc.constantFrom(...PENDING_FIELDS).map((field) => [field]) },
    fc.subarray([...PENDING_FIELDS], { minLength: 1 }),
  )
  .chain((badFields) =>
    fc.record(
      Object.fromEntries(
        PENDING_FIELDS.map((field) => [
          field,
          badFields.includes(field) ? BAD_PENDING_VALUES[field] : fc.constant(VALID_PENDING[field]),
        ]),
      ) as Record<PendingField, fc.Arbitrary<unknown>>,
    ),
  );

export function pendingValue(pending: BadPending): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(pending)) {
    if (value !== undefined) result[field] = value;
  }
  return result;
}

// ── Options (B3, B5, B7, E1, E2, E5, E6) ─────────────────────────────────────────────────

export type OptionType = 'boolean' | 'cursor' | 'limit' | 'sequence' | 'array' | 'string';

/** The options of each call and the type of each; anything else is an unknown option. */
export const CALL_OPTIONS = {
  save: {
    fsync: 'boolean',
    skipIndex: 'boolean',
    touchUpdatedAt: 'boolean',
    allowShrink: 'boolean',
  },
  create: {
    fsync: 'boolean',
    skipIndex: 'boolean',
    touchUpdatedAt: 'boolean',
    allowShrink: 'boolean',
  },
  load: { summaryOnly: 'boolean', refresh: 'boolean' },
  list: { cursor: 'cursor', limit: 'limit', includeRotated: 'boolean' },
  readJournal: { afterSequence: 'sequence', upToSequence: 'sequence', limit: 'sequence' },
  beginRun: { attachments: 'array' },
  complete: { assistantMessages: 'array' },
  fail: { code: 'string' },
} as const satisfies Record<string, Record<string, OptionType>>;

export type OptionCall = keyof typeof CALL_OPTIONS;

/** Fields of a call's input that are checked elsewhere (an id, the message): never "unknown". */
const OTHER_FIELDS: Partial<Record<OptionCall, readonly string[]>> = {
  beginRun: ['userMessage', 'runId'],
  fail: ['message'],
};

/** A value of the wrong type for an option of `type` (undefined means "not given": valid). */
export function wrongValue(type: OptionType): fc.Arbitrary<unknown> {
  const anyOther = fc.oneof(
    fc.string({ maxLength: 6 }),
    fc.constant('true'),
    fc.constant(null),
    fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
  );
  switch (type) {
    case 'boolean':
      return fc.oneof(anyOther, fc.integer(), fc.constant('false'), fc.constant([true]));
    case 'cursor':
      return fc.oneof(fc.integer(), fc.boolean(), fc.constant([]), fc.constant({}));
    case 'limit':
      return fc.oneof(
        fc.integer({ max: 0 }),
        fc.integer({ min: 1001 }),
        fc
          .double({ min: 1.1, max: 999.9, noNaN: true })
          .filter((value) => !Number.isInteger(value)),
        fc.constant('5'),
        fc.boolean(),
        fc.constant(null),
      );
    case 'sequence':
      return fc.oneof(
        fc.integer({ max: -1 }),
        fc.double({ min: 0.1, max: 99.9, noNaN: true }).filter((value) => !Number.isInteger(value)),
        fc.constant('3'),
        fc.constant(null),
        fc.constant(Number.POSITIVE_INFINITY),
      );
    case 'array':
      return fc.oneof(
        fc.string({ maxLength: 6 }),
        fc.integer(),
        fc.constant({}),
        fc.constant(null),
      );
    case 'string':
      return fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.constant(['code']));
  }
}

export interface BadOption {
  call: OptionCall;
  key: string;
  value: unknown;
  /** A key the call does not know (a typo), or a known key with a wrong value. */
  unknownKey: boolean;
}

/** One bad option of one of `calls`. */
export function badOption(calls: readonly OptionCall[]): fc.Arbitrary<BadOption> {
  return fc.constantFrom(...calls).chain((call) => {
    const known = CALL_OPTIONS[call] as Record<string, OptionType>;
    const unknown = fc
      .record({
        key: fc
          .oneof(
            fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9]{0,11}$/),
            fc.constantFrom('fsnyc', 'durable', 'summary', 'after', 'rewriteRevision', 'Fsync'),
          )
          .filter((key) => !(key in known) && !(OTHER_FIELDS[call] ?? []).includes(key)),
        value: fc.oneof(fc.boolean(), fc.integer(), fc.string({ maxLength: 4 })),
      })
      .map(({ key, value }) => ({ call, key, value: value as unknown, unknownKey: true }));
    const wrong = fc.constantFrom(...Object.keys(known)).chain((key) =>
      wrongValue(known[key] as OptionType).map((value) => ({
        call,
        key,
        value,
        unknownKey: false,
      })),
    );
    return fc.oneof(unknown, wrong);
  });
}

// ── Store options (A3 and the options of C4, E2, E4, F1…) ───────────────────────────────

export interface BadStoreOption {
  /** `cahce` (unknown at the top), `cache.maxSession` (unknown in a group), `cache.maxSessions`. */
  path: string[];
  value: unknown;
}

const STORE_OPTION_GROUPS: Record<
  string,
  Record<string, 'positive' | 'nonNegative' | 'durability'>
> = {
  limits: {
    maxDocumentBytes: 'positive',
    maxMessages: 'positive',
    maxJournalEventBytes: 'positive',
  },
  cache: { maxSessions: 'positive' },
  journal: { durability: 'durability' },
  checkpoint: { intervalMs: 'positive', idleRefreshMs: 'positive' },
  recovery: { graceMs: 'nonNegative', maxAttempts: 'positive', giveUpMs: 'positive' },
  lifecycle: { drainDeadlineMs: 'positive' },
  deltas: { compactAfter: 'positive', compactRatio: 'nonNegative' },
};

export const badStoreOption: fc.Arbitrary<BadStoreOption> = fc.oneof(
  // An unknown option at the top level (a typo of a group).
  fc
    .stringMatching(/^[a-z][a-zA-Z]{2,10}$/)
    .filter(
      (key) =>
        !(key in STORE_OPTION_GROUPS) && !['adapter', 'clock', 'flushConcurrency'].includes(key),
    )
    .map((key) => ({ path: [key], value: {} as unknown })),
  // An unknown option inside a known group.
  fc.constantFrom(...Object.keys(STORE_OPTION_GROUPS)).chain((group) =>
    fc
      .stringMatching(/^[a-z][a-zA-Z]{2,12}$/)
      .filter((key) => !(key in (STORE_OPTION_GROUPS[group] ?? {})))
      .map((key) => ({ path: [group, key], value: 1 as unknown })),
  ),
  // A known option with a value of the wrong type or range.
  fc.constantFrom(...Object.keys(STORE_OPTION_GROUPS)).chain((group) => {
    const options = STORE_OPTION_GROUPS[group] ?? {};
    return fc.constantFrom(...Object.keys(options)).chain((key) => {
      const kind = options[key];
      const wrong =
        kind === 'durability'
          ? fc.constantFrom('sometimes', 'EACH', '', 1, true)
          : fc.oneof(
              fc.constant('10'),
              fc.constant(null),
              fc.constant(Number.NaN),
              fc.constant(Number.POSITIVE_INFINITY),
              kind === 'positive' ? fc.integer({ max: 0 }) : fc.integer({ max: -1 }),
              kind === 'positive'
                ? fc
                    .double({ min: 0.1, max: 99.9, noNaN: true })
                    .filter((v) => !Number.isInteger(v))
                : fc.constant(-0.5),
            );
      return wrong.map((value) => ({ path: [group, key], value: value as unknown }));
    });
  }),
);

export function storeOptionsOf(bad: BadStoreOption): Record<string, unknown> {
  const [first, second] = bad.path;
  if (second === undefined) return { [first as string]: bad.value };
  return { [first as string]: { [second]: bad.value } };
}

// ── Journal events (E2) ─────────────────────────────────────────────────────────────────

export const BAD_EVENT_KINDS = [
  'data-date',
  'data-boxed',
  'data-to-json-string',
  'data-to-json-array',
  'data-array',
  'data-string',
  'data-number',
  'data-deep',
  'data-bigint',
  'data-cycle',
  'unknown-field',
  'unknown-type',
  'bad-event-id',
  'reused-event-id',
  'not-an-object',
] as const;

export type BadEventKind = (typeof BAD_EVENT_KINDS)[number];

export interface BadEvent {
  kind: BadEventKind;
  depth: number;
  text: string;
  badId: unknown;
}

export const badEvent: fc.Arbitrary<BadEvent> = fc.record({
  kind: fc.constantFrom(...BAD_EVENT_KINDS),
  depth: fc.integer({ min: 300, max: 6_000 }),
  text: fc.string({ minLength: 1, maxLength: 12 }),
  badId: badId.filter((value) => value !== undefined),
});

/** Token texts of the valid events around the bad one. */
export const tokenTexts: fc.Arbitrary<string[]> = fc.array(
  fc.string({ minLength: 1, maxLength: 8 }),
  {
    minLength: 1,
    maxLength: 4,
  },
);
