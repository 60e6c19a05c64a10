/**
 * The `keepsake` command as a library: `runCli` runs one command line with the streams you
 * give it, and the pieces a program may want on its own (URL parsing, exit codes, the export
 * file's reader and writer as storage adapters).
 */
export { type BackendSpec, parseBackendUrl } from './backend-url.js';
export * from './cli-errors.js';
export { type CliIo, nodeStream, type OutputStream, processIo } from './cli-io.js';
export { EXIT_CODES, type ExitCode, type ExitCodeName } from './exit-codes.js';
export { ExportReader } from './export-file/export-reader.js';
export { ExportWriter } from './export-file/export-writer.js';
export { runCli } from './run-cli.js';
