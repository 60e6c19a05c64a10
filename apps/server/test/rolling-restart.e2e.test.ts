import { randomBytes } from 'node:crypto';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { readEvents, recordsOf, type SseEvent } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

/**
 * Issue 41 item 5: a rolling restart of three server processes on one Redis, under load.
 * Each instance in turn gets SIGTERM while answers stream from it: the answers shorter than
 * its drain finish there (C2, E5), the clients whose streams it closed reconnect to another
 * instance with Last-Event-ID and see every record once, in order (E9), and a replacement
 * starts. An answer longer than the drain is stopped at it, and the instance's exit ends
 * it for its readers elsewhere at once (owner liveness, F1): the recovery grace is an hour
 * here, so an ending that waited for it would never come.
 */
const keyPrefix = `rolling-${randomBytes(4).toString('hex')}`;
let redis: RedisServerProcess;
const children: ChildServer[] = [];

beforeAll(async () => {
  redis = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await redis.dispose();
});

async function startInstance(answerWords = 40): Promise<ChildServer> {
  const child = await startChildServer({
    KEEPSAKE_BACKEND: 'redis',
    KEEPSAKE_REDIS_URL: redis.url,
    KEEPSAKE_REDIS_KEY_PREFIX: keyPrefix,
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '10',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: String(answerWords),
    KEEPSAKE_RECOVERY_GRACE_MS: '3600000',
    // Runs get half of it to finish: 4 s, ten times a short answer here.
    KEEPSAKE_SHUTDOWN_DEADLINE_MS: '8000',
    KEEPSAKE_STREAM_POLL_MS: '50',
  });
  children.push(child);
  return child;
}

/** One client following one answer, reconnecting with Last-Event-ID when its stream closes. */
async function followToEnd(
  instances: () => ChildServer[],
  eventsPath: string,
  first: SseEvent[],
): Promise<SseEvent[]> {
  const events = [...first];
  for (;;) {
    if (events.at(-1)?.event === 'end') return events;
    const live = instances().filter((instance) => instance.process.exitCode === null);
    const lastId = recordsOf(events).at(-1)?.id;
    const next = await readEvents(`${live.at(-1)!.url}${eventsPath}`, {
      token: aliceToken,
      ...(lastId === undefined ? {} : { lastEventId: Number(lastId) }),
    });
    if (next.status !== 200) throw new Error(`events answered ${next.status}`);
    events.push(...next.events);
  }
}

function expectEachRecordOnce(events: SseEvent[]) {
  const ids = recordsOf(events).map((event) => Number(event.id));
  expect(ids).toEqual(ids.map((_, index) => index + 1));
}

describe('rolling restart of three instances under load', () => {
  it('answers shorter than the drain complete, clients resume elsewhere and see each record once, a longer answer ends at once elsewhere', async () => {
    const instances = [await startInstance(), await startInstance(), await startInstance()];
    for (let round = 0; round < 3; round++) {
      const leaving = instances[0]!;
      const streams = await Promise.all(
        [0, 1, 2, 3].map(async (index) => {
          const sessionId = await createSession(
            leaving.url,
            aliceToken,
            `round ${round} #${index}`,
          );
          const { eventsUrl } = await sendMessage(leaving.url, aliceToken, sessionId, `q${index}`);
          const firstPart = await readEvents(`${leaving.url}${eventsUrl}`, {
            token: aliceToken,
            until: (_event, events) => events.length >= 2,
          });
          return { sessionId, eventsUrl, firstPart: firstPart.events };
        }),
      );
      // SIGTERM mid-answer; the replacement starts meanwhile, as a deployment does it.
      const exiting = leaving.kill('SIGTERM');
      instances.shift();
      instances.push(await startInstance());
      const followed = await Promise.all(
        streams.map((stream) => followToEnd(() => instances, stream.eventsUrl, stream.firstPart)),
      );
      expect(await exiting, leaving.output()).toEqual({ code: 0, signal: null });
      for (const [index, events] of followed.entries()) {
        expectEachRecordOnce(events);
        expect(events.at(-1)?.data, `round ${round} #${index}`).toMatchObject({
          terminalState: 'completed',
        });
        const session = await getSession(instances[0]!.url, aliceToken, streams[index]!.sessionId);
        expect(session.pending).toBeNull();
        // The question once, then the answer (its tool step and its text), and no marker.
        const roles = session.messages.map((message: { role: string }) => message.role);
        expect(roles[0]).toBe('user');
        expect(roles.slice(1).every((role: string) => role === 'assistant')).toBe(true);
        expect(session.messages.some((message: { marker?: unknown }) => message.marker)).toBe(
          false,
        );
      }
    }

    // An answer longer than the drain: stopped at it, then ended for its readers elsewhere
    // by the owner's exit, not by the hour-long grace.
    const long = await startInstance(5_000);
    const sessionId = await createSession(long.url, aliceToken, 'longer than the drain');
    const { eventsUrl } = await sendMessage(long.url, aliceToken, sessionId, 'a long one');
    const firstPart = await readEvents(`${long.url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length >= 3,
    });
    const exiting = long.kill('SIGTERM');
    const events = await followToEnd(() => instances, eventsUrl, firstPart.events);
    expect(await exiting, long.output()).toEqual({ code: 0, signal: null });
    expectEachRecordOnce(events);
    expect(events.at(-1)?.data).toMatchObject({ terminalState: 'interrupted-by-crash' });
    const session = await getSession(instances[0]!.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1).marker.type).toBe('interrupted');
  }, 240_000);
});
