import { InvalidInputError } from '@keepsake/core';

/**
 * Opaque cursors: base64url of a JSON value. They name the last item of a page, so a page
 * stays correct when items are added or removed between two calls.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const value = parseCursor(cursor);
  if (typeof value !== 'string') throw invalidCursor(cursor);
  return value;
}

/** An index cursor: the `[updatedAt, id]` of the last entry of the previous page. */
export function decodeIndexCursor(cursor: string): [number, string] {
  const value = parseCursor(cursor);
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'number' ||
    typeof value[1] !== 'string'
  ) {
    throw invalidCursor(cursor);
  }
  return [value[0], value[1]];
}

function parseCursor(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalidCursor(cursor, error);
  }
}

function invalidCursor(cursor: string, cause?: unknown): InvalidInputError {
  return new InvalidInputError(
    `fs adapter: cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this adapter returned`,
    cause === undefined ? {} : { cause },
  );
}
