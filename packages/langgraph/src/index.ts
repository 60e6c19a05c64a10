export { CheckpointConflictError, CorruptCheckpointError } from './errors.js';
export { KeepsakeSaver, type KeepsakeSaverOptions } from './saver.js';
