import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

let dataDirectory: string;
const children: ChildServer[] = [];

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-shutdown-e2e-'));
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await rm(dataDirectory, { recursive: true, force: true });
});

async function start(answerWords: number): Promise<ChildServer> {
  const child = await startChildServer({
    KEEPSAKE_DATA_DIR: dataDirectory,
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '10',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: String(answerWords),
    KEEPSAKE_RECOVERY_GRACE_MS: '300',
    KEEPSAKE_SHUTDOWN_DEADLINE_MS: '3000',
  });
  children.push(child);
  return child;
}

function shutdownReport(child: ChildServer) {
  const line = child
    .output()
    .split('\n')
    .find((entry) => entry.startsWith('shutdown '));
  expect(line, child.output()).toBeDefined();
  return JSON.parse(line!.slice(line!.indexOf('{')));
}

describe('graceful shutdown on SIGTERM', () => {
  it('C2: a run that finishes within the grace period completes, and the process exits 0', async () => {
    const server = await start(30);
    const sessionId = await createSession(server.url, aliceToken);
    const { eventsUrl } = await sendMessage(server.url, aliceToken, sessionId, 'short one');
    await readEvents(`${server.url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length >= 2,
    });
    const exit = await server.kill('SIGTERM');
    expect(exit, server.output()).toEqual({ code: 0, signal: null });
    expect(shutdownReport(server)).toMatchObject({
      timedOut: false,
      runsFinished: 1,
      runsStopped: 0,
    });

    const restarted = await start(30);
    const session = await getSession(restarted.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1)).toMatchObject({ role: 'assistant' });
    expect(session.messages.some((message: { marker?: unknown }) => message.marker)).toBe(false);
    await restarted.kill('SIGTERM');
  });

  it('C2: a run still streaming at the deadline is checkpointed, and recovered after restart', async () => {
    const server = await start(5000);
    const sessionId = await createSession(server.url, aliceToken);
    const { eventsUrl } = await sendMessage(server.url, aliceToken, sessionId, 'endless one');
    const stream = readEvents(`${server.url}${eventsUrl}`, { token: aliceToken });
    await readEvents(`${server.url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length >= 8,
    });
    const sigtermAt = Date.now();
    const exit = await server.kill('SIGTERM');
    expect(exit, server.output()).toEqual({ code: 0, signal: null });
    expect(Date.now() - sigtermAt).toBeLessThan(3000 + 2000);
    expect(shutdownReport(server)).toMatchObject({ timedOut: false, runsStopped: 1 });
    // The open stream was ended without an `end` event: the client knows to reconnect.
    const followed = await stream;
    expect(followed.ended).toBe(false);
    expect(followed.events.length).toBeGreaterThanOrEqual(8);

    const restarted = await start(30);
    const lastSeen = Number(followed.events.at(-1)?.id);
    const resumed = await readEvents(`${restarted.url}${eventsUrl}`, {
      token: aliceToken,
      lastEventId: lastSeen,
    });
    expect(resumed.events.at(-1)?.data.terminalState).toBe('interrupted-by-crash');
    const session = await getSession(restarted.url, aliceToken, sessionId);
    expect(session.messages[0]).toMatchObject({ role: 'user', content: 'endless one' });
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'interrupted' });
    expect((await call(restarted.url, '/readyz')).status).toBe(200);
    await restarted.kill('SIGTERM');
  });
});
