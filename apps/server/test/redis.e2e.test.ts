import { randomBytes } from 'node:crypto';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

/**
 * The server on Redis (KEEPSAKE_BACKEND=redis): a redis-server with AOF `appendfsync
 * always` started for this file, server processes started as `pnpm start` runs them. A
 * server SIGKILLed mid-answer is recovered by the next one from the Redis journal, and an
 * SSE stream resumes with Last-Event-ID on another server process.
 */
let redis: RedisServerProcess;
const children: ChildServer[] = [];

beforeAll(async () => {
  redis = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await redis.dispose();
});

function environment(keyPrefix: string): Record<string, string> {
  return {
    KEEPSAKE_BACKEND: 'redis',
    KEEPSAKE_REDIS_URL: redis.url,
    KEEPSAKE_REDIS_KEY_PREFIX: keyPrefix,
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    // Slow enough that a kill lands mid-answer.
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: '2000',
    KEEPSAKE_RECOVERY_GRACE_MS: '300',
    KEEPSAKE_STREAM_POLL_MS: '50',
  };
}

async function start(keyPrefix: string): Promise<ChildServer> {
  const child = await startChildServer(environment(keyPrefix));
  children.push(child);
  return child;
}

/** Waits for a condition the test cannot be told about otherwise (a child's log line). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('the server on Redis', () => {
  it('F1: SIGKILL mid-answer, restart: the transcript is recovered from Redis and Last-Event-ID gets the rest', async () => {
    const keyPrefix = `e2e-${randomBytes(4).toString('hex')}`;
    const first = await start(keyPrefix);
    const info = await call(first.url, '/api/info');
    expect(info.body.backend).toBe('redis');
    const sessionId = await createSession(first.url, aliceToken, 'Crash drill on Redis');
    const { runId } = await sendMessage(first.url, aliceToken, sessionId, 'Tell me a long story');
    const eventsPath = `/api/sessions/${sessionId}/runs/${runId}/events`;
    const seen = await readEvents(`${first.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.filter((event) => event.event === 'token').length >= 8,
    });
    const lastSeen = Number(seen.events.at(-1)?.id);
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const second = await start(keyPrefix);
    const resumed = await readEvents(`${second.url}${eventsPath}`, {
      token: aliceToken,
      lastEventId: lastSeen,
    });
    expect(resumed.ended).toBe(true);
    const rest = recordsOf(resumed.events);
    expect(rest.map((event) => Number(event.id))).toEqual(
      rest.map((_event, index) => lastSeen + 1 + index),
    );
    expect(rest.at(-1)?.event).toBe('interrupted');
    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages[0]).toMatchObject({ role: 'user', content: 'Tell me a long story' });
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'interrupted', runId });
    const all = await readEvents(`${second.url}${eventsPath}`, { token: aliceToken });
    const streamedText = recordsOf(all.events)
      .filter((event) => event.event === 'token')
      .map((event) => event.data.data.text)
      .join('');
    expect(
      session.messages.some(
        (message: { role: string; content: unknown }) =>
          message.role === 'assistant' && message.content === streamedText,
      ),
    ).toBe(true);
    await second.kill('SIGTERM');
  });

  it('E6, E9: a run whose failure cannot be recorded while Redis is down ends with its error once Redis is back, also for a reader on its own instance', async () => {
    const server = await start(`e2e-${randomBytes(4).toString('hex')}`);
    const sessionId = await createSession(server.url, aliceToken, 'Redis goes away');
    const { runId } = await sendMessage(server.url, aliceToken, sessionId, 'a long answer please');
    const eventsPath = `/api/sessions/${sessionId}/runs/${runId}/events`;
    const seen = await readEvents(`${server.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.filter((event) => event.event === 'token').length >= 3,
    });
    // Redis dies mid-answer: the next append fails the run, and recording that failure
    // fails too. The run must not stay live in its process with nothing left to end it.
    await redis.kill();
    await until(() => server.output().includes('recording the failure failed'));
    await redis.start();
    const rest = await readEvents(`${server.url}${eventsPath}`, {
      token: aliceToken,
      lastEventId: Number(seen.events.at(-1)?.id),
    });
    expect(rest.ended).toBe(true);
    expect(rest.events.at(-1)?.data).toMatchObject({ terminalState: 'errored' });
    const session = await getSession(server.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'errored', runId });
    // Not busy any more on the instance that owned the run.
    const next = await sendMessage(server.url, aliceToken, sessionId, 'and now?');
    expect(next.runId).not.toBe(runId);
    await server.kill('SIGTERM');
  }, 90_000);

  it('a stream started on one server process resumes on another after the first is killed', async () => {
    const keyPrefix = `e2e-${randomBytes(4).toString('hex')}`;
    const [first, second] = await Promise.all([start(keyPrefix), start(keyPrefix)]);
    const sessionId = await createSession(first.url, aliceToken, 'Failover on Redis');
    const { runId } = await sendMessage(first.url, aliceToken, sessionId, 'a long answer please');
    const eventsPath = `/api/sessions/${sessionId}/runs/${runId}/events`;
    const seen = await readEvents(`${first.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.length >= 6,
    });
    const lastSeen = Number(seen.events.at(-1)?.id);
    await first.kill('SIGKILL');

    const resumed = await readEvents(`${second.url}${eventsPath}`, {
      token: aliceToken,
      lastEventId: lastSeen,
    });
    expect(resumed.ended).toBe(true);
    const rest = recordsOf(resumed.events);
    expect(rest[0] && Number(rest[0].id)).toBe(lastSeen + 1);
    expect(resumed.events.at(-1)?.data).toMatchObject({ terminalState: 'interrupted-by-crash' });
    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    // The session takes a new message on the surviving server.
    const next = await sendMessage(second.url, aliceToken, sessionId, 'and now?');
    expect(next.runId).not.toBe(runId);
    await second.kill('SIGTERM');
  });
});
