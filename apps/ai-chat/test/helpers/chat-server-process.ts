import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const appDirectory = fileURLToPath(new URL('../../', import.meta.url));

export interface ChatServerProcess {
  readonly url: string;
  readonly process: ChildProcess;
  output(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the example's server (`src/server/main.ts`) in a process of its own, as
 * `pnpm start` runs it, and resolves once it printed its URL. The browser test SIGKILLs one.
 */
export async function startChatServerProcess(
  env: Record<string, string>,
): Promise<ChatServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
    cwd: appDirectory,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    output += text;
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    output += text;
  });
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match !== null) {
        child.stdout.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', onData);
    void exited.then(([code]) => reject(new Error(`the server exited (${code}):\n${output}`)));
  });
  return {
    url,
    process: child,
    output: () => output,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
