import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

let dataDirectory: string;
let first: ChildServer;
let second: ChildServer;

const environment = (directory: string) => ({
  KEEPSAKE_DATA_DIR: directory,
  KEEPSAKE_TOKENS: `alice:${aliceToken}`,
  KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '2',
  KEEPSAKE_SCRIPTED_ANSWER_WORDS: '20',
  KEEPSAKE_RECOVERY_GRACE_MS: '1000',
  KEEPSAKE_STREAM_POLL_MS: '50',
});

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-two-process-e2e-'));
  [first, second] = await Promise.all([
    startChildServer(environment(dataDirectory)),
    startChildServer(environment(dataDirectory)),
  ]);
});
afterAll(async () => {
  await Promise.all([first.kill('SIGKILL'), second.kill('SIGKILL')]);
  await rm(dataDirectory, { recursive: true, force: true });
});

/**
 * Sends a message through `url` and follows the run to its end. While the other server's
 * run owns the session the send is a 409 session_busy: the client waits for that run
 * to end (by following it) and sends again, as the web demo would.
 */
async function sendAndFinish(url: string, sessionId: string, content: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content },
    });
    if (response.status === 202) {
      const stream = await readEvents(`${url}${response.body.eventsUrl}`, { token: aliceToken });
      expect(stream.events.at(-1)?.data.terminalState).toBe('completed');
      return;
    }
    expect(response.status, JSON.stringify(response.body)).toBe(409);
    expect(response.body.error.code).toBe('session_busy');
    const session = await getSession(url, aliceToken, sessionId);
    if (session.pending !== null) {
      await readEvents(`${url}/api/sessions/${sessionId}/runs/${session.pending.streamId}/events`, {
        token: aliceToken,
      });
    }
  }
  throw new Error(`"${content}" was never accepted`);
}

describe('two server processes on one data directory', () => {
  it('B4: concurrent writes to one session from both lose nothing (conflicts are retried)', async () => {
    const sessionId = await createSession(first.url, aliceToken, 'Shared');
    // Both servers rename the session while both stream runs into it: every write races
    // writes of the other process, and each must land (a conflict is retried, not a 409).
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
    await Promise.all([
      (async () => {
        for (const content of ['first-1', 'first-2', 'first-3']) {
          await sendAndFinish(first.url, sessionId, content);
        }
      })(),
      (async () => {
        for (const content of ['second-1', 'second-2', 'second-3']) {
          await sendAndFinish(second.url, sessionId, content);
        }
      })(),
      renames(first.url, 'first'),
      renames(second.url, 'second'),
    ]);

    for (const url of [first.url, second.url]) {
      const session = await getSession(url, aliceToken, sessionId);
      expect(['first 9', 'second 9']).toContain(session.title);
      expect(session.pending).toBeNull();
      const users = session.messages
        .filter((message: { role: string }) => message.role === 'user')
        .map((message: { content: string }) => message.content);
      expect([...users].sort()).toEqual([
        'first-1',
        'first-2',
        'first-3',
        'second-1',
        'second-2',
        'second-3',
      ]);
      expect(users.filter((content: string) => content.startsWith('first'))).toEqual([
        'first-1',
        'first-2',
        'first-3',
      ]);
      // Every turn kept its answer, and nothing was marked interrupted.
      const answers = session.messages.filter(
        (message: { role: string; content: unknown; marker?: unknown }) =>
          message.role === 'assistant' &&
          typeof message.content === 'string' &&
          message.content.startsWith('You asked'),
      );
      expect(answers).toHaveLength(6);
      expect(session.messages.some((message: { marker?: unknown }) => message.marker)).toBe(false);
    }
  });

  it('E6: a run streamed by one server is cancelled through the other, and both move on', async () => {
    // From here on the first server streams slowly: its runs are surely mid-answer.
    await first.kill('SIGTERM');
    first = await startChildServer({
      ...environment(dataDirectory),
      KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
      KEEPSAKE_SCRIPTED_ANSWER_WORDS: '2000',
    });
    const sessionId = await createSession(first.url, aliceToken, 'Cancel across');
    const started = await call(first.url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'stop me from elsewhere' },
    });
    const eventsPath = started.body.eventsUrl as string;
    await readEvents(`${second.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.length >= 5,
    });
    const stream = readEvents(`${first.url}${eventsPath}`, { token: aliceToken, lastEventId: 5 });
    const cancelled = await call(second.url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: { runId: started.body.runId },
    });
    expect(cancelled.body).toEqual({ cancelled: true, sessionId, runId: started.body.runId });
    const ended = await stream;
    expect(ended.events.at(-1)?.data.terminalState).toBe('interrupted-by-user');
    const session = await getSession(first.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'cancelled' });

    // The first server noticed the sealed journal and released the session: it takes the
    // next message (after a moment in which its agent reaches its next append).
    let next = await call(first.url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'and now this' },
    });
    for (let attempt = 0; next.status === 409 && attempt < 100; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      next = await call(first.url, `/api/sessions/${sessionId}/messages`, {
        token: aliceToken,
        method: 'POST',
        body: { content: 'and now this' },
      });
    }
    expect(next.status, JSON.stringify(next.body)).toBe(202);
    const again = await call(first.url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: {},
    });
    expect(again.body.cancelled).toBe(true);
  });

  it('a stream started on one server resumes on the other after the first is killed', async () => {
    const sessionId = await createSession(first.url, aliceToken, 'Failover');
    const started = await call(first.url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'a long answer please' },
    });
    expect(started.status).toBe(202);
    const eventsPath = started.body.eventsUrl as string;
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
    expect(rest.map((event) => Number(event.id))).toEqual(
      rest.map((_event, index) => lastSeen + 1 + index),
    );
    expect(rest.at(-1)?.event).toBe('interrupted');
    expect(resumed.events.at(-1)?.data.terminalState).toBe('interrupted-by-crash');
    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages[0]).toMatchObject({ role: 'user', content: 'a long answer please' });
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'interrupted' });
  });
});
