import type { Collection } from '@keepsake/core';
import { assertDocumentId as assertCoreDocumentId, InvalidIdError } from '@keepsake/core';

/**
 * A1: ids become file names only through this encoding, and only after validation.
 *
 * Ids are case-sensitive but many filesystems are not (macOS, Windows, some FUSE and SMB
 * mounts), so `Chat-A` and `chat-a` must not share a file. The encoding lower-cases the id
 * and records which positions were upper-case as a bit mask in base 32, after a `=`:
 *
 *   chat-a      → chat-a=
 *   Chat-A      → chat-a=11        (bits 0 and 5)
 *   sess.12     → sess+12=         (each `.` of a document id becomes `+`)
 *
 * Every encoded name is lower-case, contains no `.` (so Windows never reads `con.5` as the
 * reserved device `CON`), is never a bare reserved name (it always contains `=`), and stays
 * under 255 bytes: ids are at most 160 characters (a checkpoint document id, core's
 * `MAX_DOTTED_ID_LENGTH`), so a name is at most 160 + 1 + 32 characters. The encoding is a
 * bijection onto its canonical names; `decodeName` rejects anything else, so stray files
 * are never listed.
 */
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
const ENCODED_NAME = /^([a-z0-9_+-]{1,160})=([1-9a-v][0-9a-v]*)?$/;

export function isSafeId(id: string): boolean {
  return SESSION_ID.test(id);
}

/** Throws InvalidIdError unless `id` is a valid session or run id. */
export function assertSafeId(id: string, kind: 'session' | 'run'): void {
  if (!SESSION_ID.test(id)) {
    throw new InvalidIdError(kind, id, 'may contain only A-Z, a-z, 0-9, "_" and "-" (1 to 128)');
  }
}

/**
 * Throws InvalidIdError unless `id` is valid for documents of `collection` (core's shapes,
 * see `COLLECTIONS` in @keepsake/core), and InvalidInputError for an unknown collection.
 */
export function assertDocumentId(collection: Collection, id: string): void {
  assertCoreDocumentId(collection, id);
}

export function encodeId(id: string): string {
  let body = '';
  let mask = 0n;
  for (let index = 0; index < id.length; index++) {
    const character = id[index] as string;
    if (character >= 'A' && character <= 'Z') {
      body += character.toLowerCase();
      mask |= 1n << BigInt(index);
    } else if (character === '.') {
      body += '+';
    } else {
      body += character;
    }
  }
  return `${body}=${mask === 0n ? '' : mask.toString(32)}`;
}

/** The id of a canonical encoded name, or null for any other name (temp files, strays). */
export function decodeName(name: string): string | null {
  const match = ENCODED_NAME.exec(name);
  if (!match) return null;
  const body = match[1] as string;
  const mask = match[2] === undefined ? 0n : parseBase32(match[2]);
  if (mask >> BigInt(body.length) !== 0n) return null;
  let id = '';
  for (let index = 0; index < body.length; index++) {
    const character = body[index] as string;
    const upper = ((mask >> BigInt(index)) & 1n) === 1n;
    if (upper) {
      if (character < 'a' || character > 'z') return null;
      id += character.toUpperCase();
    } else {
      id += character === '+' ? '.' : character;
    }
  }
  return id;
}

function parseBase32(digits: string): bigint {
  let value = 0n;
  for (const digit of digits) value = value * 32n + BigInt(Number.parseInt(digit, 32));
  return value;
}
