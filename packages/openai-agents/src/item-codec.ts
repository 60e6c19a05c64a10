import { InvalidInputError } from '@keepsake/core';
import type { AgentInputItem } from '@openai/agents-core';

/**
 * An `AgentInputItem` as Keepsake stores it: JSON, with the two values items may hold that JSON
 * has no form for tagged, so the round trip is exact (`getItems` gives back what `addItems`
 * was given, key order included):
 *
 * - a `Uint8Array` (tool output images and files may carry their bytes) is `{ "$bytes": base64 }`;
 * - `undefined` (a property the SDK set to undefined, as `MemorySession` keeps it) is
 *   `{ "$undefined": true }`;
 * - a key of the item's own that starts with `$` gets one more `$` in front, so a tag is never
 *   mistaken for data.
 *
 * Anything else that JSON cannot hold (a class instance, a function, a bigint, NaN, a cycle) is
 * refused with `InvalidInputError` naming its path, before anything is written.
 */
export type StoredItem = Record<string, unknown>;

const BYTES = '$bytes';
const UNDEFINED = '$undefined';

export function encodeItem(item: AgentInputItem, path: string): StoredItem {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw new InvalidInputError(`${path} must be an item object`, { path });
  }
  return encodeValue(item, path, new Set()) as StoredItem;
}

function encodeValue(value: unknown, path: string, ancestors: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new InvalidInputError(`${path} is ${value}, which JSON cannot store`, { path });
    }
    return value;
  }
  if (value === undefined) return { [UNDEFINED]: true };
  if (typeof value !== 'object') {
    throw new InvalidInputError(`${path} is a ${typeof value}, which JSON cannot store`, { path });
  }
  if (value instanceof Uint8Array) {
    return {
      [BYTES]: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'),
    };
  }
  if (ancestors.has(value)) throw new InvalidInputError(`${path} is a cycle`, { path });
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const out = new Array<unknown>(value.length);
      for (let index = 0; index < value.length; index++) {
        out[index] = encodeValue(value[index], `${path}[${index}]`, ancestors);
      }
      return out;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      throw new InvalidInputError(`${path} is a ${name}, which JSON cannot store`, { path });
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const stored = key.startsWith('$') ? `$${key}` : key;
      setOwn(
        out,
        stored,
        encodeValue((value as Record<string, unknown>)[key], `${path}.${key}`, ancestors),
      );
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

/** The item a stored item holds: a fresh object the caller may change. */
export function decodeItem(stored: StoredItem): AgentInputItem {
  return decodeValue(stored) as AgentInputItem;
}

function decodeValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(decodeValue);
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1) {
    const only = keys[0]!;
    if (only === BYTES && typeof record[BYTES] === 'string') {
      return new Uint8Array(Buffer.from(record[BYTES], 'base64'));
    }
    if (only === UNDEFINED && record[UNDEFINED] === true) return undefined;
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    setOwn(out, key.startsWith('$$') ? key.slice(1) : key, decodeValue(record[key]));
  }
  return out;
}

/**
 * Sets `key` as an own, enumerable data property. Assigned (which keeps the object in V8's
 * fast mode: getItems decodes every item of a history on each call), except `__proto__`,
 * which an assignment would take as the prototype: that one is defined, so it stays a key.
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  } else {
    target[key] = value;
  }
}

/** The readable text of an item (message text, a call's name), for Keepsake's own tools. */
export function textOfItem(item: AgentInputItem): string {
  const record = item as Record<string, unknown>;
  if (record.type === undefined || record.type === 'message') {
    const content = record.content;
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
      return content
        .map((part) => {
          const text = (part as { text?: unknown; refusal?: unknown } | null)?.text;
          return typeof text === 'string' ? text : '';
        })
        .join('');
    }
    return '';
  }
  return '';
}

/** The Keepsake role of a stored item: who said it, as a transcript reader expects. */
export function roleOfItem(item: AgentInputItem): 'user' | 'assistant' | 'system' | 'tool' {
  const record = item as Record<string, unknown>;
  if (record.type === undefined || record.type === 'message') {
    if (record.role === 'user') return 'user';
    if (record.role === 'system' || record.role === 'developer') return 'system';
    return 'assistant';
  }
  const type = typeof record.type === 'string' ? record.type : '';
  return type.endsWith('_result') || type.endsWith('_output') ? 'tool' : 'assistant';
}
