/**
 * Test helpers for `@keepsake/fs`. Everything here is FAULT INJECTION or instrumentation for
 * tests; none of it belongs in a production store.
 */
export {
  countingFileSystem,
  type FileSystemCallCounts,
} from './counting-file-system.js';
export {
  FaultInjectingFileSystem,
  type FaultRule,
  faultInjectingFileSystem,
} from './fault-injecting-file-system.js';
export type { FileSystemOperation } from './file-system-calls.js';
export {
  type PausableOperation,
  type Pause,
  pausingFileSystem,
} from './pausing-file-system.js';
export type { PowerLossOptions } from './strict-memory-tree.js';
