import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const serverDirectory = fileURLToPath(new URL('../../', import.meta.url));

export interface ChildServer {
  readonly url: string;
  readonly process: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves with the exit code (or the signal) once the process is gone. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `src/main.ts` in its own process, exactly as `pnpm start` runs it, and resolves
 * once it printed its URL. Crash tests SIGKILL it; shutdown tests SIGTERM it.
 */
export async function startChildServer(env: Record<string, string>): Promise<ChildServer> {
  const { child, output, exited } = spawnServer(env);
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output());
      if (match) {
        child.stdout?.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout?.on('data', onData);
    void exited.then(({ code }) =>
      reject(new Error(`server exited (${code}) before listening:\n${output()}`)),
    );
  });
  return {
    url,
    process: child,
    output,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs `src/main.ts` until it exits by itself (a server that cannot start). */
export async function runChildServerToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const { output, exited } = spawnServer(env);
  const { code } = await exited;
  return { code, output: output() };
}

function spawnServer(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDirectory,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      KEEPSAKE_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return { child, output: () => output, exited };
}
