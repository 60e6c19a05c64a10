import { randomFillSync } from 'node:crypto';
import { COLLECTIONS, type Collection } from '../adapter/collections.js';
import { InvalidIdError, InvalidInputError } from '../errors/input-errors.js';

/** A1: the only id shape that is safe as a path segment, a Redis key part and an S3 key part. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export type IdKind = 'session' | 'run' | 'stream' | 'message' | 'event';

/** Throws InvalidIdError unless `value` is a safe id; returns it typed as string. */
export function assertValidId(value: unknown, kind: IdKind = 'session'): string {
  if (typeof value !== 'string') throw new InvalidIdError(kind, value, 'must be a string');
  if (value.length === 0) throw new InvalidIdError(kind, value, 'must not be empty');
  if (value.length > 128) throw new InvalidIdError(kind, value, 'must be at most 128 characters');
  if (!ID_PATTERN.test(value)) {
    throw new InvalidIdError(kind, value, 'may contain only A-Z, a-z, 0-9, "_" and "-"');
  }
  return value;
}

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** At most this many dot-separated segments in a `checkpoints` or `checkpoint-writes` id. */
export const MAX_DOTTED_ID_SEGMENTS = 5;
/** At most this many characters in a `checkpoints` or `checkpoint-writes` id, dots included. */
export const MAX_DOTTED_ID_LENGTH = 160;

const REVISION_DOCUMENT_ID = /^([A-Za-z0-9_-]{1,128})\.(0|[1-9][0-9]{0,15})$/;
const DOTTED_ID = /^[A-Za-z0-9_-]{1,128}(\.[A-Za-z0-9_-]{1,128}){0,4}$/;
const COLLECTION_SET: ReadonlySet<string> = new Set(COLLECTIONS);

/** The id kind named in the InvalidIdError of each collection. */
const DOCUMENT_ID_KIND: Readonly<Record<Collection, string>> = {
  sessions: 'session',
  revisions: 'retained revision',
  lifecycle: 'session',
  runs: 'run',
  checkpoints: 'checkpoint document',
  'checkpoint-writes': 'checkpoint-writes document',
};

/**
 * A1: throws unless `collection` is one of `COLLECTIONS` (InvalidInputError) and `id` is a
 * document id of its shape (InvalidIdError); see `COLLECTIONS` in adapter.ts for the shapes.
 * Every adapter calls it before an id becomes a path or a key.
 */
export function assertDocumentId(collection: Collection, id: unknown): string {
  assertCollection(collection);
  const kind = DOCUMENT_ID_KIND[collection];
  if (typeof id !== 'string') throw new InvalidIdError(kind, id, 'must be a string');
  switch (collection) {
    case 'sessions':
    case 'lifecycle':
    case 'runs':
      return assertValidId(id, kind as IdKind);
    case 'revisions':
      if (!REVISION_DOCUMENT_ID.test(id)) {
        throw new InvalidIdError(kind, id, 'must be "<sessionId>.<revision>"');
      }
      return id;
    default:
      if (id.length > MAX_DOTTED_ID_LENGTH) {
        throw new InvalidIdError(kind, id, `must be at most ${MAX_DOTTED_ID_LENGTH} characters`);
      }
      if (!DOTTED_ID.test(id)) {
        throw new InvalidIdError(
          kind,
          id,
          `must be 1 to ${MAX_DOTTED_ID_SEGMENTS} segments of A-Z, a-z, 0-9, "_" and "-" (1 to 128 each), joined by "."`,
        );
      }
      return id;
  }
}

/** Throws InvalidInputError unless `collection` is one of `COLLECTIONS`. */
export function assertCollection(collection: unknown): Collection {
  if (typeof collection !== 'string' || !COLLECTION_SET.has(collection)) {
    throw new InvalidInputError(
      `Unknown document collection ${JSON.stringify(String(collection))}: expected one of ${COLLECTIONS.join(', ')}`,
      { path: 'collection' },
    );
  }
  return collection as Collection;
}

/** Whether `id` is a valid document id of `collection` (never throws). */
export function isValidDocumentId(collection: Collection, id: unknown): id is string {
  try {
    assertDocumentId(collection, id);
    return true;
  } catch {
    return false;
  }
}

/**
 * H2: the key that every document of one group shares: the session id of a session, its
 * lifecycle state and its retained revisions; the run id of a run; the first segment of a
 * checkpoint or checkpoint-writes id (a LangGraph thread). Validates like `assertDocumentId`.
 */
export function documentGroup(collection: Collection, id: string): string {
  assertDocumentId(collection, id);
  if (collection === 'sessions' || collection === 'lifecycle' || collection === 'runs') return id;
  const dot = id.indexOf('.');
  return dot === -1 ? id : id.slice(0, dot);
}

const ID_BYTES = 16;
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let poolOffset = pool.length;

/**
 * A random id in the A1 alphabet (URL-safe base64 of 16 random bytes). Bytes come from a
 * pool refilled 4 KiB at a time: one id is made per journal event, and a system call per
 * event showed up in profiles of many concurrent streams.
 */
export function randomId(): string {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const id = pool.toString('base64url', poolOffset, poolOffset + ID_BYTES);
  poolOffset += ID_BYTES;
  return id;
}
