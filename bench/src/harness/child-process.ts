import { spawn } from 'node:child_process';

export interface ChildOptions {
  /** Extra flags for node, e.g. --expose-gc. */
  readonly nodeFlags?: readonly string[];
  /** The worker kills itself with SIGKILL after reporting (a simulated crash). */
  readonly endsKilled?: boolean;
}

/**
 * Runs a worker script in a fresh Node process and returns the JSON it printed on its last
 * line of stdout. Cold starts and peak memory are only honest in a process of their own.
 */
export function runWorker<T>(script: URL, input: unknown, options: ChildOptions = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...(options.nodeFlags ?? []), script.pathname, JSON.stringify(input)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const killedAsPlanned = options.endsKilled === true && signal === 'SIGKILL';
      if (code !== 0 && !killedAsPlanned) {
        const reason = signal ? `signal ${signal}` : `exit code ${code}`;
        reject(new Error(`worker ${script.pathname} failed with ${reason}:\n${stderr.trim()}`));
        return;
      }
      const last = stdout.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(last) as T);
      } catch (error) {
        reject(
          new Error(`worker ${script.pathname} printed no JSON result: ${last}`, { cause: error }),
        );
      }
    });
  });
}

/** The input a worker was started with (the JSON argument `runWorker` passed). */
export function workerInput<T>(): T {
  const text = process.argv[2];
  if (text === undefined) throw new Error('worker started without its JSON input argument');
  return JSON.parse(text) as T;
}

/** Prints a worker's result as the last line of stdout. */
export function reportFromWorker(result: unknown): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
