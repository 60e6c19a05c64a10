import { describe, expect, it } from 'vitest';
import { findUnstorableValue, MAX_SESSION_DEPTH } from './json-value.js';

function problemOf(value: unknown) {
  return findUnstorableValue(value, { maxDepth: MAX_SESSION_DEPTH });
}

function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let current = root;
  for (let level = 1; level < levels; level++) {
    const child: Record<string, unknown> = {};
    current.a = child;
    current = child;
  }
  return root;
}

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

describe('A4: values JSON stores as they are', () => {
  it('accepts plain data, null-prototype objects and undefined object properties', () => {
    const value = {
      text: 'ünï \u2028',
      number: -0.5,
      flag: false,
      nothing: null,
      skipped: undefined,
      list: [1, 'two', { three: [3] }],
      bare: Object.assign(Object.create(null) as object, { a: 1 }),
    };
    expect(problemOf(value)).toBeNull();
  });

  it.each([
    ['a bigint', { metadata: { n: 1n } }, 'metadata.n', /bigint/],
    ['NaN', { metadata: { n: Number.NaN } }, 'metadata.n', /NaN/],
    ['Infinity', { list: [Number.POSITIVE_INFINITY] }, 'list[0]', /Infinity/],
    ['a function', { metadata: { run() {} } }, 'metadata.run', /function/],
    ['a toJSON method', { metadata: { toJSON: () => 'x' } }, 'metadata.toJSON', /toJSON/],
    ['a symbol', { metadata: { s: Symbol('s') } }, 'metadata.s', /symbol/],
    ['a Date', { metadata: { at: new Date(0) } }, 'metadata.at', /Date/],
    ['a boxed Number', { metadata: { n: Object(1) } }, 'metadata.n', /boxed Number/],
    ['a boxed String', { metadata: { s: Object('s') } }, 'metadata.s', /boxed String/],
    ['a Map', { metadata: { m: new Map() } }, 'metadata.m', /Map/],
    ['a Uint8Array', { metadata: { b: new Uint8Array(2) } }, 'metadata.b', /Uint8Array/],
    ['a class instance', { metadata: { p: new Point(1, 2) } }, 'metadata.p', /Point/],
    ['undefined in an array', { list: [1, undefined] }, 'list[1]', /undefined/],
    ['a hole in an array', { list: new Array(3).fill(1, 0, 1) }, 'list[1]', /hole/],
    ['a key that is not an identifier', { metadata: { 'a b': 1n } }, 'metadata["a b"]', /bigint/],
  ])('refuses %s, naming its path', (_label, value, path, reason) => {
    const problem = problemOf(value);
    expect(problem?.path).toBe(path);
    expect(problem?.reason).toMatch(reason);
  });

  it('A4: refuses an enumerable symbol-keyed property (JSON drops it), naming its path, on objects and arrays; a non-enumerable one is ignored', () => {
    const key = Symbol('note');
    expect(problemOf({ metadata: { [key]: 1 } })?.path).toBe('metadata[Symbol(note)]');
    expect(problemOf({ metadata: { [key]: 1 } })?.reason).toMatch(/keyed by a symbol/);
    expect(problemOf({ list: Object.assign([1], { [key]: 1 }) })?.path).toBe('list[Symbol(note)]');
    expect(problemOf({ [Symbol.for('shared')]: undefined })?.path).toBe('[Symbol(shared)]');
    // A non-enumerable property, keyed by a symbol or not, is a library's marker, not data.
    const marked = { text: 'kept' };
    Object.defineProperty(marked, Symbol('administration'), { value: { big: 1n } });
    Object.defineProperty(marked, '__ob__', { value: { big: 1n } });
    expect(problemOf({ metadata: marked })).toBeNull();
  });

  it('refuses a cycle, naming where it refers back to', () => {
    const metadata: Record<string, unknown> = { inner: {} };
    (metadata.inner as Record<string, unknown>).back = metadata;
    const problem = problemOf({ metadata });
    expect(problem?.path).toBe('metadata.inner.back');
    expect(problem?.reason).toMatch(/refers back to `metadata`/);
  });

  it('refuses a getter that throws, with its error as the cause', () => {
    const failure = new Error('boom');
    const value = {
      metadata: {
        get broken(): never {
          throw failure;
        },
      },
    };
    const problem = problemOf(value);
    expect(problem?.path).toBe('metadata.broken');
    expect(problem?.cause).toBe(failure);
  });

  it('A3: accepts nesting up to the limit and refuses one level more, far below where JSON.stringify overflows', () => {
    expect(problemOf(nested(MAX_SESSION_DEPTH))).toBeNull();
    expect(problemOf(nested(MAX_SESSION_DEPTH + 1))?.reason).toMatch(/deeper than 512/);
    // The depth the issue found: JSON.stringify throws a RangeError there; the walk does not.
    expect(problemOf(nested(5_000))?.reason).toMatch(/deeper than 512/);
    expect(() => JSON.stringify(nested(MAX_SESSION_DEPTH))).not.toThrow();
  });

  it('counts levels from where the value sits (a message is at level 3 of its session)', () => {
    const message = nested(MAX_SESSION_DEPTH - 2);
    expect(findUnstorableValue(message, { rootDepth: 3, maxDepth: MAX_SESSION_DEPTH })).toBeNull();
    const deeper = nested(MAX_SESSION_DEPTH - 1);
    expect(
      findUnstorableValue(deeper, { rootDepth: 3, maxDepth: MAX_SESSION_DEPTH }),
    ).not.toBeNull();
  });
});
