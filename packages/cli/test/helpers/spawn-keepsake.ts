import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const hooks = fileURLToPath(new URL('../fixtures/ts-hooks.mjs', import.meta.url));
const bin = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

/**
 * `keepsake <args>` in a real Node process (the TypeScript sources, through the test's loader
 * hooks), so a test can SIGKILL it by its pid. stdout and stderr are pipes: not a terminal, so
 * progress comes as plain lines on stderr.
 */
export function spawnKeepsake(args: readonly string[]): ChildProcessWithoutNullStreams {
  return spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--import', hooks, bin, ...args],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-cli-test-cache') },
    },
  );
}

/** Resolves with the exit code and signal once the child is gone. */
export function exited(
  child: ChildProcessWithoutNullStreams,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
      return;
    }
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/**
 * Runs a fixture of test/fixtures (TypeScript, through the loader hooks) until it ends; it
 * must end by SIGKILL, as a crashed process does.
 */
export async function runUntilKilled(fixture: string, args: readonly string[]): Promise<void> {
  const script = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url));
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--import', hooks, script, ...args],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-cli-test-cache') },
    },
  );
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const ended = await exited(child);
  if (ended.signal !== 'SIGKILL') {
    throw new Error(`${fixture} ended with ${ended.code ?? ended.signal}: ${errors}`);
  }
}
