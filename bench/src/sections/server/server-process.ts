import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { serverDirectory, typeScriptLoader } from './server-location.js';

export interface ServerProcess {
  readonly url: string;
  /** The process's resident memory now (VmRSS). */
  residentBytes(): Promise<number>;
  /** SIGTERM, which closes the stores (C2); SIGKILL if it has not exited within 15 s. */
  stop(): Promise<void>;
}

export interface ServerProcessOptions {
  readonly dataDirectory: string;
  readonly tokenDelayMs: number;
  readonly answerWords: number;
  /** More environment for the server: another backend (KEEPSAKE_BACKEND=redis, its URL). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Starts the reference server (`src/main.ts`, as `pnpm start` runs it) in its own process:
 * open mode on loopback, the fs backend in the trial's directory (unless `env` names
 * another), the scripted agent at the section's pace, and a rate limit no benchmark reaches.
 */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...typeScriptLoader, 'src/main.ts'], {
    cwd: serverDirectory,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      KEEPSAKE_LOG_LEVEL: 'warn',
      KEEPSAKE_DATA_DIR: options.dataDirectory,
      KEEPSAKE_AGENT: 'scripted',
      KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: String(options.tokenDelayMs),
      KEEPSAKE_SCRIPTED_ANSWER_WORDS: String(options.answerWords),
      KEEPSAKE_RATE_LIMIT_MAX: String(1_000_000_000),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        child.stdout.off('data', onData);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    void exited.then(() => reject(new Error(`the server exited before listening:\n${output}`)));
  });
  return {
    url,
    residentBytes: () => residentBytesOf(child),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function residentBytesOf(child: ChildProcess): Promise<number> {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  const kibibytes = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? Number.NaN);
  return kibibytes * 1024;
}
