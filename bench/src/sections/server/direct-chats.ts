import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import type { TrialFigures } from './chat-turns.js';
import type { DirectWorkerReply, DirectWorkerRequest } from './direct-worker.js';
import { serverDirectory, serverModule, typeScriptLoader } from './server-location.js';

const WORKER = new URL('./direct-worker.js', import.meta.url);

export interface DirectChats {
  trial(chats: number, durationMs: number): Promise<TrialFigures>;
  close(): Promise<void>;
}

/**
 * Starts the direct contender's process (see direct-worker.ts). It runs from the server's
 * directory with the server's tsx loader, so it imports the very agent the server runs.
 */
export async function startDirectChats(options: {
  directory: string;
  tokenDelayMs: number;
  answerWords: number;
}): Promise<DirectChats> {
  const child = fork(WORKER, [], {
    cwd: serverDirectory,
    execArgv: [...typeScriptLoader],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await request(child, {
    type: 'open',
    ...options,
    agentModule: serverModule('src/agents/scripted-agent.ts'),
    journalEventsModule: serverModule('src/runs/journal-events.ts'),
  });
  return {
    async trial(chats, durationMs) {
      const reply = await request(child, { type: 'trial', chats, durationMs });
      if (reply.type !== 'result') throw new Error('the direct worker sent no result');
      return reply.figures;
    },
    async close() {
      const exited = once(child, 'exit');
      child.send({ type: 'close' } satisfies DirectWorkerRequest);
      await exited;
    },
  };
}

async function request(
  child: ChildProcess,
  message: DirectWorkerRequest,
): Promise<DirectWorkerReply> {
  const reply = new Promise<DirectWorkerReply>((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`the direct worker exited (${code}) during "${message.type}"`));
    child.once('exit', onExit);
    child.once('message', (answer: DirectWorkerReply) => {
      child.off('exit', onExit);
      if (answer.type === 'failed') reject(new Error(`direct worker: ${answer.error}`));
      else resolve(answer);
    });
  });
  child.send(message);
  return reply;
}
