export {
  CheckpointConflictError,
  CorruptCheckpointError,
  MissingChannelSourceError,
  type MissingChannelSourceProblem,
} from './errors.js';
export { KeepsakeSaver, type KeepsakeSaverOptions } from './saver.js';
