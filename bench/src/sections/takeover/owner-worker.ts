import { createSessionStore } from '@keepsake/core';
import { type BackendSettings, backendAdapter } from './backends.js';

/**
 * The owner of one run, in a process of its own so that the takeover section can SIGKILL
 * it: opens the backend with default settings, says `ready`, and on `begin` starts a run
 * (with one token record, or none) and says `begun`; on `complete`, completes it. The
 * section then kills it, or lets it complete, and times its follower.
 */
export type OwnerRequest =
  | { readonly type: 'begin'; readonly withRecord: boolean }
  | { readonly type: 'complete' };

export type OwnerReply =
  | { readonly type: 'ready' }
  | { readonly type: 'begun'; readonly sessionId: string; readonly runId: string }
  | { readonly type: 'completed' }
  | { readonly type: 'failed'; readonly error: string };

const argument = process.argv[2];
if (argument === undefined) throw new Error('owner-worker started without its settings');
const settings = JSON.parse(argument) as BackendSettings;
const store = createSessionStore({ adapter: backendAdapter(settings) });
let running: Awaited<ReturnType<typeof store.beginRun>> | null = null;

function reply(message: OwnerReply): void {
  process.send?.(message);
}

process.on('message', (request: OwnerRequest) => {
  const handled =
    request.type === 'begin'
      ? (async () => {
          const session = await store.create({ title: 'takeover' });
          running = await store.beginRun(session.id, {
            userMessage: { role: 'user', content: 'Tell me a long story.' },
          });
          if (request.withRecord) {
            await running.append({ type: 'token', data: { text: 'Once upon a time' } });
          }
          reply({ type: 'begun', sessionId: session.id, runId: running.runId });
        })()
      : (async () => {
          await running?.complete();
          await store.close();
          reply({ type: 'completed' });
        })();
  handled.catch((error: unknown) => {
    reply({
      type: 'failed',
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  });
});

// The store opens its adapter on first use: open it now, so `begin` measures nothing of it
// and the backend's liveness (a Redis connection name, an S3 lease) exists before the run.
await store.list({ limit: 1 });
reply({ type: 'ready' });
