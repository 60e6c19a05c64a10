export type {
  AdapterCapabilities,
  AdapterLiveness,
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
  OwnerState,
  PutResult,
  QuarantinedDocument,
  StorageAdapter,
  StorageAdapterV1,
  StoredDocument,
  WriteOptions,
} from './adapter/adapter.js';
export { COLLECTIONS, REQUIRED_ADAPTER_PRIMITIVES } from './adapter/adapter.js';
export {
  createMemoryBackend,
  dropMemoryNamespace,
  type MemoryAdapterOptions,
  type MemoryBackend,
  memoryAdapter,
} from './adapter/memory-adapter.js';
export { type MigrationReport, migrateBackend } from './adapter/migrate.js';
export {
  type HeldWrite,
  type ReadOnlyOverlay,
  readOnlyOverlay,
} from './adapter/read-only-overlay.js';
export * from './errors/input-errors.js';
export {
  KeepsakeError,
  type KeepsakeErrorCode,
  type KeepsakeErrorOptions,
} from './errors/keepsake-error.js';
export * from './errors/lifecycle-errors.js';
export * from './errors/run-errors.js';
export * from './errors/storage-errors.js';
export type * from './lifecycle/memory-types.js';
export type * from './options/store-options.js';
export { MARKER_WORDING } from './recovery/markers.js';
export type * from './runs/follow/follow-types.js';
export { type RunStanding, runStandingIn as runStandingOf } from './runs/follow/run-standing.js';
export type * from './runs/run-types.js';
export { createMessage } from './sessions/create-message.js';
export { decodeStoredSession, encodeSessionDocument } from './sessions/documents/codec-helpers.js';
export { type DecodeResult, summaryOf } from './sessions/documents/document-codec.js';
export type * from './sessions/session-types.js';
export {
  type Closable,
  installShutdownHooks,
  type ShutdownHookOptions,
} from './shutdown/shutdown.js';
export { createSessionStore } from './store.js';
export type * from './store-types.js';
export { type Clock, ManualClock, settle, systemClock, type TimerHandle } from './time/clock.js';
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
} from './validation/ids.js';
export { MAX_EVENT_DATA_DEPTH, MAX_SESSION_DEPTH } from './validation/json-value.js';
export * from './validation/schemas.js';
