import { randomFillSync } from 'node:crypto';
import { InvalidIdError } from './input-errors.js';

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
