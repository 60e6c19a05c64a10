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
export { type Clock, ManualClock, settle, systemClock, type TimerHandle } from './clock.js';
export { createMessage } from './create-message.js';
export {
  type DecodeResult,
  decodeSession as decodeStoredSession,
  encodeFull as encodeSessionDocument,
} from './document-codec.js';
export * from './errors.js';
export { assertValidId, ID_PATTERN, isValidId, randomId } from './ids.js';
export { MARKER_WORDING } from './markers.js';
export {
  createMemoryBackend,
  dropMemoryNamespace,
  type MemoryAdapterOptions,
  type MemoryBackend,
  memoryAdapter,
} from './memory-adapter.js';
export { type MigrationReport, migrateBackend } from './migrate.js';
export * from './schemas.js';
export { type Closable, installShutdownHooks, type ShutdownHookOptions } from './shutdown.js';
export { createSessionStore } from './store.js';
export type * from './store-types.js';
