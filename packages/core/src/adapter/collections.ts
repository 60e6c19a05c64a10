/**
 * The document collections of the adapter contract (H1), on their own so that the id checks
 * (validation/ids.ts) can name them without importing the whole contract: adapter.ts re-exports
 * them, and its types refer to them.
 */

/**
 * The document collections, each a namespace of its own: the same id in two collections is
 * two documents. Every adapter stores, lists (with `prefix`), deletes and quarantines the
 * documents of every collection. Document id shapes (checked by `assertDocumentId`):
 *
 * - `sessions`: a session id; grouping key: the id.
 * - `revisions`: `<sessionId>.<revision>` (the revision 0, or up to 16 digits without a
 *   leading 0); grouping key: the session id.
 * - `lifecycle`: a session id; grouping key: the id.
 * - `runs`: a run id (core keeps there where a run lives, `{ sessionId, … }`); grouping
 *   key: the id.
 * - `checkpoints`, `checkpoint-writes`: dotted segments `<segment>(.<segment>)*` (the
 *   LangGraph saver's thread, namespace, checkpoint and write); grouping key: the first
 *   segment.
 *
 * A session or run id, and each dotted segment, matches `^[A-Za-z0-9_-]{1,128}$`. A dotted
 * id has at most `MAX_DOTTED_ID_SEGMENTS` (5) segments and `MAX_DOTTED_ID_LENGTH` (160)
 * characters in all, so the filesystem adapter's encoded file names stay far below 255
 * bytes. The grouping key (`documentGroup`) is what keys of one group share: the Redis
 * adapter uses it as the hash tag (H2), so every document of one LangGraph thread sits in
 * one Cluster slot. `listDocuments` with the prefix `<first segment>.` lists one group; the
 * checkpoint saver lists a thread, a namespace or one checkpoint's writes that way.
 */
export const COLLECTIONS = [
  'sessions',
  'revisions',
  'lifecycle',
  'runs',
  'checkpoints',
  'checkpoint-writes',
] as const;

export type Collection = (typeof COLLECTIONS)[number];
