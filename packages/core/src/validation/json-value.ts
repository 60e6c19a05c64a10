/**
 * A4: what Keepsake stores is JSON, and a session object stays live in the application after
 * it is saved. A value JSON would not store as it is (a bigint, a cycle, a Date, a class
 * instance, a function…) would either throw deep inside a save or come back different after a
 * reload. This walk finds the first such value, once, before anything is written, so the call
 * that brought it in can refuse it with the value's path.
 *
 * Accepted: plain objects (any realm, or a null prototype) and arrays, strings, finite
 * numbers, booleans and null. `undefined` as an object property is accepted and stored as an
 * absent property (as JSON.stringify does); everywhere else it is refused. An enumerable
 * symbol-keyed property (`{ [key]: value }`, `object[key] = value`) is data JSON drops
 * without a word, so it is refused like any value that does not round-trip (issue 35).
 * Non-enumerable properties, symbol-keyed or not, are what libraries hide their bookkeeping
 * in (MobX's administration, a marker set with Object.defineProperty): not data, ignored.
 *
 * The walk costs one visit per object and array and allocates nothing unless it fails (the
 * path is kept as a stack and only turned into text for the error).
 */

/**
 * A3: the deepest a session document may nest (the session object is level 1). Far below the
 * ~4,400 levels at which JSON.stringify overflows a default Node stack, far above anything a
 * conversation needs.
 */
export const MAX_SESSION_DEPTH = 512;

/**
 * A3: the deepest an event's data may nest (the data object is level 1). Folding a run's
 * journal puts `data.args` and `data.result` three levels down in a session (`toolCalls[i]`),
 * so an event that passes this limit always fits in a session that passes MAX_SESSION_DEPTH.
 */
export const MAX_EVENT_DATA_DEPTH = 256;

export interface UnstorableValue {
  /**
   * Where the value is, from the walk's root: `metadata.n`, `messages[2].content[0].text`;
   * `''` when it is the root itself.
   */
  path: string;
  /** What is wrong with it and what to store instead. */
  reason: string;
  /** The error a getter or a Proxy trap threw while the value was read. */
  cause?: unknown;
}

type PathSegment = string | number | symbol;

/**
 * The first value under `root` that JSON would not store as it is, or null when there is
 * none. `rootPath` names the root in the result (`''` for none); `rootDepth` is the level of
 * the root itself (a message inside a session is at level 3: session, messages, message).
 */
export function findUnstorableValue(
  root: unknown,
  options: { rootPath?: string; rootDepth?: number; maxDepth: number },
): UnstorableValue | null {
  const walk = new JsonWalk(options.maxDepth);
  return walk.run(root, options.rootPath ?? '', options.rootDepth ?? 1);
}

/**
 * The same check over the own fields of a plain object, except those in `skip` (a session's
 * `messages`, checked message by message where they are normalized). The object itself counts
 * as level `depth`; it must be a plain object.
 */
export function findUnstorableField(
  object: object,
  options: { skip?: string; rootPath?: string; depth: number; maxDepth: number },
): UnstorableValue | null {
  const walk = new JsonWalk(options.maxDepth);
  return walk.runFields(object, options.skip, options.rootPath ?? '', options.depth);
}

class JsonWalk {
  private readonly path: PathSegment[] = [];
  private readonly ancestors: object[] = [];
  private rootPath = '';

  constructor(private readonly maxDepth: number) {}

  run(root: unknown, rootPath: string, depth: number): UnstorableValue | null {
    this.rootPath = rootPath;
    try {
      const reason = root === undefined ? UNDEFINED_VALUE : this.visit(root, depth);
      return reason === null ? null : this.problem(reason);
    } catch (cause) {
      return this.problem(unreadable(cause), cause);
    }
  }

  runFields(
    object: object,
    skip: string | undefined,
    rootPath: string,
    depth: number,
  ): UnstorableValue | null {
    this.rootPath = rootPath;
    try {
      const reason = nonPlainObjectReason(object) ?? this.visitFields(object, depth, skip);
      return reason === null ? null : this.problem(reason);
    } catch (cause) {
      return this.problem(unreadable(cause), cause);
    }
  }

  private visit(value: unknown, depth: number): string | null {
    switch (typeof value) {
      case 'string':
      case 'boolean':
        return null;
      case 'number':
        return Number.isFinite(value)
          ? null
          : `is ${String(value)}, which JSON stores as null; store a finite number, or null`;
      case 'bigint':
        return 'is a bigint, which JSON cannot store; store it as a string (String(value)) and convert it back when reading';
      case 'symbol':
        return 'is a symbol, which JSON cannot store';
      case 'function':
        return this.path.at(-1) === 'toJSON'
          ? 'is a toJSON method: JSON would store what it returns instead of the object it belongs to; store that value itself'
          : 'is a function, which JSON drops without a word; store data only';
      case 'undefined':
        return UNDEFINED_VALUE;
      default:
        if (value === null) return null;
        return this.visitObject(value as object, depth);
    }
  }

  private visitObject(value: object, depth: number): string | null {
    if (depth > this.maxDepth) return this.tooDeep(value);
    if (Array.isArray(value)) {
      this.ancestors.push(value);
      for (let index = 0; index < value.length; index++) {
        this.path.push(index);
        const item: unknown = value[index];
        const reason =
          item === undefined
            ? 'is undefined (or a hole) in an array, which JSON stores as null; store null'
            : this.visit(item, depth + 1);
        if (reason !== null) return reason;
        this.path.pop();
      }
      this.ancestors.pop();
      return this.visitSymbolKeys(value);
    }
    return nonPlainObjectReason(value) ?? this.visitFields(value, depth, undefined);
  }

  private visitFields(value: object, depth: number, skip: string | undefined): string | null {
    this.ancestors.push(value);
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key === skip) continue;
      this.path.push(key);
      const field = record[key];
      // An undefined property is stored as an absent one: the same thing to a reader.
      if (field !== undefined) {
        const reason = this.visit(field, depth + 1);
        if (reason !== null) return reason;
      }
      this.path.pop();
    }
    this.ancestors.pop();
    return this.visitSymbolKeys(value);
  }

  /**
   * A4: an enumerable symbol-keyed property, which JSON drops; null when there is none. The
   * store's own markers (registered symbols named `keepsake.…`, such as a summary view's) are
   * not the caller's data, as `_keepsake` fields are not.
   */
  private visitSymbolKeys(value: object): string | null {
    for (const key of Object.getOwnPropertySymbols(value)) {
      if (!Object.prototype.propertyIsEnumerable.call(value, key)) continue;
      if (Symbol.keyFor(key)?.startsWith('keepsake.') === true) continue;
      this.path.push(key);
      return SYMBOL_KEY;
    }
    return null;
  }

  /**
   * Past the depth limit: a cycle (then name the first object the walk met again and where
   * it was first, which costs something only now) or a value nested too deeply.
   */
  private tooDeep(value: object): string {
    const chain = [...this.ancestors, value];
    for (let position = 1; position < chain.length; position++) {
      const first = chain.indexOf(chain[position] as object);
      if (first < position) {
        const target = describePath(this.rootPath, this.path.slice(0, first));
        this.path.length = position;
        return `refers back to \`${target}\` (a cycle), which JSON cannot store`;
      }
    }
    return `nests deeper than ${this.maxDepth} levels, the most Keepsake stores (A3)`;
  }

  private problem(reason: string, cause?: unknown): UnstorableValue {
    const path = describePath(this.rootPath, this.path);
    return cause === undefined ? { path, reason } : { path, reason, cause };
  }
}

const UNDEFINED_VALUE = 'is undefined, which JSON cannot store; store null or leave it out';
const SYMBOL_KEY =
  'is keyed by a symbol, which JSON drops without a word; use a string key, or make it non-enumerable (Object.defineProperty) if it is not data';

function unreadable(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  return `could not be read (a getter or a Proxy threw: ${message})`;
}

/** Null for an object JSON stores as it is; else what it is and what to store instead. */
function nonPlainObjectReason(value: object): string | null {
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) return null;
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  // A plain object made in another realm (a vm context, a worker's structured clone).
  if (tag === 'Object' && isForeignObjectPrototype(prototype)) return null;
  switch (tag) {
    case 'Date':
      return 'is a Date, which JSON stores as a string and reads back as one; store date.toISOString() or date.getTime()';
    case 'Number':
    case 'String':
    case 'Boolean':
    case 'BigInt':
    case 'Symbol':
      return `is a boxed ${tag} (new ${tag}(…)), which JSON does not read back as an object; store the primitive value`;
    case 'Map':
    case 'Set':
    case 'WeakMap':
    case 'WeakSet':
      return `is a ${tag}, which JSON stores as {} (its entries are lost); store an array or a plain object`;
    case 'RegExp':
    case 'Error':
    case 'Promise':
      return `is a ${tag}, which JSON stores as {}; store its parts as plain data`;
    default:
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
        return `is a ${tag}, which JSON stores as an object of indexes; store it as text (base64)`;
      }
      return `is ${describeInstance(prototype, tag)}, which JSON stores as a plain object without its class, prototype or getters; store a plain object`;
  }
}

function isForeignObjectPrototype(prototype: unknown): boolean {
  if (typeof prototype !== 'object' || prototype === null) return false;
  if (Object.getPrototypeOf(prototype) !== null) return false;
  const maker = (prototype as { constructor?: unknown }).constructor;
  return typeof maker === 'function' && maker.name === 'Object';
}

function describeInstance(prototype: unknown, tag: string): string {
  const maker =
    typeof prototype === 'object' && prototype !== null
      ? (prototype as { constructor?: unknown }).constructor
      : undefined;
  const name = typeof maker === 'function' ? maker.name : '';
  return name.length > 0 && name !== 'Object'
    ? `an instance of ${name}`
    : `an object with a prototype other than Object.prototype (${tag})`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `metadata.n`, `messages[2].content`, `metadata["a b"]`; `''` for the root itself. */
export function describePath(rootPath: string, segments: readonly PathSegment[]): string {
  // A path as deep as the depth limit would fill a screen: its start and end say where.
  const text =
    segments.length <= 16
      ? appendSegments(rootPath, segments)
      : `${appendSegments(rootPath, segments.slice(0, 8))}…(${segments.length - 12} levels)…${appendSegments('', segments.slice(-4))}`;
  return text;
}

function appendSegments(start: string, segments: readonly PathSegment[]): string {
  let text = start;
  for (const segment of segments) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (typeof segment === 'symbol') text += `[${segment.toString()}]`;
    else if (IDENTIFIER.test(segment)) text += text.length === 0 ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}
