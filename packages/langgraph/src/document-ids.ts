import { createHash } from 'node:crypto';
import { MAX_DOTTED_ID_LENGTH } from '@keepsake/core';

/**
 * LangGraph's thread ids, namespaces, checkpoint ids and task ids are
 * arbitrary strings; Keepsake document ids are dotted segments of `[A-Za-z0-9_-]` (see
 * `COLLECTIONS` in @keepsake/core). Each value becomes one segment of at most
 * `SEGMENT_BUDGET` characters, one of three ways:
 *
 * - **as it is**, when it is 1 to 36 characters of `[A-Za-z0-9-]` (a UUID, `thread-7`);
 * - **escaped**: `_` followed by the base64url of its UTF-8 bytes, when that fits (`""`, the
 *   root namespace, is `_`; `a:b` is `_YTpi`);
 * - **hashed**: `__` followed by 22 base64url characters of the SHA-256 of its JSON text,
 *   for anything longer. The document keeps the original value, and every read checks it.
 *
 * The three forms never meet: a plain value has no `_`; an escaped one starts with exactly
 * one `_` (base64url starts with `_` only for a first byte of 0xFC or above, which UTF-8
 * never has); a hashed one starts with `__`. So distinct values get distinct segments, and
 * a plain or escaped segment decodes back to its value without reading the document.
 *
 * Four segments of 36 plus a write index of at most 11 characters and 4 dots is 159
 * characters: every id (a checkpoint has three segments, pending writes five) fits core's
 * 160-character limit.
 */
export const SEGMENT_BUDGET = 36;

const PLAIN = /^[A-Za-z0-9-]{1,36}$/;
const HASHED_PREFIX = '__';
const HASH_CHARACTERS = 22;

export function encodeSegment(value: string): string {
  if (PLAIN.test(value)) return value;
  // A lone surrogate has no UTF-8 form of its own (it would become U+FFFD), so only
  // well-formed strings are escaped; JSON text keeps the lone surrogate, so hashing is exact.
  if (Buffer.from(value, 'utf8').toString('utf8') === value) {
    const escaped = `_${Buffer.from(value, 'utf8').toString('base64url')}`;
    if (escaped.length <= SEGMENT_BUDGET) return escaped;
  }
  const digest = createHash('sha256').update(JSON.stringify(value)).digest('base64url');
  return `${HASHED_PREFIX}${digest.slice(0, HASH_CHARACTERS)}`;
}

/** The value of a plain or escaped segment; null for a hashed one (read the document). */
export function decodeSegment(segment: string): string | null {
  if (segment.startsWith(HASHED_PREFIX)) return null;
  if (segment.startsWith('_')) return Buffer.from(segment.slice(1), 'base64url').toString('utf8');
  return segment;
}

/** Where one thread's, one namespace's or one checkpoint's documents are, as id prefixes. */
export class DocumentIds {
  readonly thread: string;
  readonly namespace: string;

  constructor(threadId: string, checkpointNamespace: string) {
    this.thread = encodeSegment(threadId);
    this.namespace = encodeSegment(checkpointNamespace);
  }

  /** Prefix of every document of the thread, in both collections. */
  static threadPrefix(threadId: string): string {
    return `${encodeSegment(threadId)}.`;
  }

  /** Prefix of the thread's checkpoints in this namespace. */
  get namespacePrefix(): string {
    return `${this.thread}.${this.namespace}.`;
  }

  /** `checkpoints`: the checkpoint itself (three segments). */
  checkpoint(checkpointId: string): string {
    return checked(`${this.namespacePrefix}${encodeSegment(checkpointId)}`);
  }

  /** `checkpoint-writes`: prefix of every pending write of one checkpoint. */
  writesPrefix(checkpointId: string): string {
    return `${this.namespacePrefix}${encodeSegment(checkpointId)}.`;
  }

  /** `checkpoint-writes`: prefix of every pending-writes document of one task. */
  taskWritesPrefix(checkpointId: string, taskId: string): string {
    return `${this.writesPrefix(checkpointId)}${encodeSegment(taskId)}.`;
  }

  /** `checkpoint-writes`: one pending write (five segments). */
  write(checkpointId: string, taskId: string, index: number): string {
    if (!Number.isSafeInteger(index) || Math.abs(index) >= 1e9) {
      throw new RangeError(`a write index must be an integer below 1e9 in size, not ${index}`);
    }
    return checked(`${this.writesPrefix(checkpointId)}${encodeSegment(taskId)}.${index}`);
  }
}

/** How many dot-separated segments an id has (3: a checkpoint). */
export function segmentCount(id: string): number {
  let count = 1;
  for (const character of id) if (character === '.') count++;
  return count;
}

/** The segments of a document id. */
export function segmentsOf(id: string): string[] {
  return id.split('.');
}

function checked(id: string): string {
  // Guaranteed by the budgets above; a failure here is a bug in this file, not bad input.
  if (id.length > MAX_DOTTED_ID_LENGTH) throw new RangeError(`document id too long: ${id}`);
  return id;
}
