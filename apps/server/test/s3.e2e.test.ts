import { randomBytes } from 'node:crypto';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

/**
 * The server on S3 (KEEPSAKE_BACKEND=s3): a Ceph RADOS Gateway started for this file (or the
 * endpoint KEEPSAKE_TEST_S3_ENDPOINT names), server processes started as `pnpm start` runs
 * them. A server SIGKILLed mid-answer is recovered by the next one from the journal's segment
 * objects; an SSE stream resumes with Last-Event-ID on another server process; two server
 * processes writing one session lose nothing (conditional PUTs, B4).
 */
let target: S3Target;
const children: ChildServer[] = [];

beforeAll(async () => {
  target = await startS3Target({ env: process.env, containerEngine: containerEngineAvailable() });
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await target?.dispose();
});

function environment(prefix: string, overrides: Record<string, string> = {}) {
  return {
    KEEPSAKE_BACKEND: 's3',
    KEEPSAKE_S3_ENDPOINT: target.endpoint,
    KEEPSAKE_S3_REGION: target.region,
    KEEPSAKE_S3_BUCKET: target.bucket,
    KEEPSAKE_S3_PREFIX: prefix,
    KEEPSAKE_S3_ACCESS_KEY_ID: target.credentials.accessKeyId,
    KEEPSAKE_S3_SECRET_ACCESS_KEY: target.credentials.secretAccessKey,
    KEEPSAKE_S3_COMPATIBILITY: target.compatibility,
    // No instance-metadata lookups, ever: the credentials are given.
    AWS_EC2_METADATA_DISABLED: 'true',
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    // Slow enough that a kill lands mid-answer.
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: '2000',
    KEEPSAKE_RECOVERY_GRACE_MS: '300',
    KEEPSAKE_STREAM_POLL_MS: '50',
    ...overrides,
  };
}

async function start(prefix: string, overrides: Record<string, string> = {}) {
  const child = await startChildServer(environment(prefix, overrides));
  children.push(child);
  return child;
}

const newPrefix = () => `e2e-${randomBytes(4).toString('hex')}`;

describe('the server on S3', () => {
  it('F1: SIGKILL mid-answer, restart: the transcript is recovered from S3 and Last-Event-ID gets the rest', async () => {
    const prefix = newPrefix();
    const first = await start(prefix);
    const info = await call(first.url, '/api/info');
    expect(info.body.backend).toBe('s3');
    const sessionId = await createSession(first.url, aliceToken, 'Crash drill on S3');
    const { runId } = await sendMessage(first.url, aliceToken, sessionId, 'Tell me a long story');
    const eventsPath = `/api/sessions/${sessionId}/runs/${runId}/events`;
    const seen = await readEvents(`${first.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.filter((event) => event.event === 'token').length >= 8,
    });
    const lastSeen = Number(seen.events.at(-1)?.id);
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const second = await start(prefix);
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

  it('a stream started on one server process resumes on another after the first is killed', async () => {
    const prefix = newPrefix();
    const [first, second] = await Promise.all([start(prefix), start(prefix)]);
    const sessionId = await createSession(first.url, aliceToken, 'Failover on S3');
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
    const next = await sendMessage(second.url, aliceToken, sessionId, 'and now?');
    expect(next.runId).not.toBe(runId);
    await second.kill('SIGTERM');
  });

  it('B4: two server processes renaming one session at once lose no rename (conflicts are retried)', async () => {
    const prefix = newPrefix();
    const fast = { KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '2', KEEPSAKE_SCRIPTED_ANSWER_WORDS: '20' };
    const [first, second] = await Promise.all([start(prefix, fast), start(prefix, fast)]);
    const sessionId = await createSession(first.url, aliceToken, 'Shared');
    const renames = (url: string, name: string) =>
      (async () => {
        for (let index = 0; index < 10; index++) {
          const response = await call(url, `/api/sessions/${sessionId}`, {
            token: aliceToken,
            method: 'PATCH',
            body: { title: `${name} ${index}` },
          });
          expect(response.status, JSON.stringify(response.body)).toBe(200);
          expect(response.body.session.title).toBe(`${name} ${index}`);
        }
      })();
    await Promise.all([renames(first.url, 'first'), renames(second.url, 'second')]);
    for (const url of [first.url, second.url]) {
      const session = await getSession(url, aliceToken, sessionId);
      expect(['first 9', 'second 9']).toContain(session.title);
    }
    await Promise.all([first.kill('SIGTERM'), second.kill('SIGTERM')]);
  });
});
