import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo, OutputStream } from '../../src/cli-io.js';
import { runCli } from '../../src/run-cli.js';

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function memoryStream(chunks: string[]): OutputStream {
  return {
    isTTY: false,
    stream: null,
    write: async (text) => {
      chunks.push(text);
    },
  };
}

/** Runs one `keepsake` command line in this process, as `bin.ts` would, with captured output. */
export async function keepsake(args: readonly string[], cwd = process.cwd()): Promise<CliResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: CliIo = { stdout: memoryStream(stdout), stderr: memoryStream(stderr), cwd, env: {} };
  const exitCode = await runCli(args, io);
  return { exitCode, stdout: stdout.join(''), stderr: stderr.join('') };
}

/** A fresh temp directory, removed by the returned function. */
export async function tempDirectory(
  label: string,
): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `keepsake-cli-${label}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
