import { createSessionStore, type SessionStore, type SessionStoreOptions } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';

/** The name Keepsake goes by in the fs sections' tables. */
export const KEEPSAKE_FS = 'Keepsake (fs)';

/** A store over the fs adapter with default options except those a section sets. */
export function openFsStore(
  directory: string,
  options: Omit<SessionStoreOptions, 'adapter'> = {},
): SessionStore {
  return createSessionStore({ ...options, adapter: fsAdapter({ directory }) });
}
