export type {
  AdapterCapabilities,
  AppendLogResult,
  CapabilityGap,
  Collection,
  DeleteOptions,
  DocumentWrite,
  DurabilityLevel,
  IdPage,
  IndexPage,
  ListDocumentsOptions,
  LogDurability,
  LogReadResult,
  LogRecordInput,
  PutResult,
  QuarantinedDocument,
  StorageAdapter,
  StorageAdapterV1,
  StoredDocument,
  WriteOptions,
} from './adapter.js';
export { COLLECTIONS, REQUIRED_ADAPTER_PRIMITIVES } from './adapter.js';
export { type Clock, ManualClock, settle, systemClock, type TimerHandle } from './clock.js';
export { decodeStoredSession, encodeSessionDocument } from './codec-helpers.js';
export { createMessage } from './create-message.js';
export { type DecodeResult, summaryOf } from './document-codec.js';
export type * from './follow-types.js';
export {
  assertCollection,
  assertDocumentId,
  assertValidId,
  documentGroup,
  ID_PATTERN,
  isValidDocumentId,
  isValidId,
  MAX_DOTTED_ID_LENGTH,
  MAX_DOTTED_ID_SEGMENTS,
  randomId,
} from './ids.js';
export * from './input-errors.js';
export { MAX_EVENT_DATA_DEPTH, MAX_SESSION_DEPTH } from './json-value.js';
export {
  KeepsakeError,
  type KeepsakeErrorCode,
  type KeepsakeErrorOptions,
} from './keepsake-error.js';
export * from './lifecycle-errors.js';
export { MARKER_WORDING } from './markers.js';
export {
  createMemoryBackend,
  dropMemoryNamespace,
  type MemoryAdapterOptions,
  type MemoryBackend,
  memoryAdapter,
} from './memory-adapter.js';
export type * from './memory-types.js';
export { type MigrationReport, migrateBackend } from './migrate.js';
export * from './run-errors.js';
export type * from './run-types.js';
export * from './schemas.js';
export type * from './session-types.js';
export { type Closable, installShutdownHooks, type ShutdownHookOptions } from './shutdown.js';
export * from './storage-errors.js';
export { createSessionStore } from './store.js';
export type * from './store-options.js';
export type * from './store-types.js';
