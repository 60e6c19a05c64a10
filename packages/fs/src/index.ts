export type { FileHandle, FileStats, FileSystem, OpenFlags } from './file-system.js';
export { nodeFileSystem } from './file-system.js';
export { fsAdapter, fsCapabilities } from './fs-adapter.js';
export { decodeName, encodeId } from './id-encoding.js';
export type { FsAdapterOptions } from './options.js';
export { type ReadOnlyFsReport, readOnlyFsReport } from './read-only-adapter.js';
