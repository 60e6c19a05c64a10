import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MARKER_WORDING } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

let dataDirectory: string;
const children: ChildServer[] = [];

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-crash-first-record-'));
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await rm(dataDirectory, { recursive: true, force: true });
});

async function start(): Promise<ChildServer> {
  const child = await startChildServer({
    KEEPSAKE_DATA_DIR: dataDirectory,
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    // The agent pauses this long before its first event: the kill lands before the run
    // journaled anything, so it leaves no journal at all (a model slow to its first token).
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '10000',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: '3',
    KEEPSAKE_RECOVERY_GRACE_MS: '400',
    KEEPSAKE_STREAM_POLL_MS: '50',
  });
  children.push(child);
  return child;
}

describe('crash e2e: SIGKILL before the run journaled its first record', () => {
  it('E1, F1, F2: the run id still resolves, its stream ends with interrupted and end, the next message is accepted', async () => {
    const first = await start();
    const sessionId = await createSession(first.url, aliceToken, 'Slow first token');
    const { runId, eventsUrl } = await sendMessage(
      first.url,
      aliceToken,
      sessionId,
      'Are you there?',
    );
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const second = await start();
    const runUrl = `/api/sessions/${sessionId}/runs/${runId}`;
    const before = await call(second.url, runUrl, { token: aliceToken });
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    expect(before.body.run).toMatchObject({ runId, exists: false, lastSequence: 0 });

    // The stream opens at once (a client can tell the server is there), then ends once the
    // session's marker for the run is final: an `interrupted` event with no id (no journal
    // record stands behind it) and `end`.
    const opened = await fetch(`${second.url}${eventsUrl}`, {
      headers: { authorization: `Bearer ${aliceToken}`, accept: 'text/event-stream' },
    });
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toContain('text/event-stream');
    await opened.body?.cancel();

    const stream = await readEvents(`${second.url}${eventsUrl}`, { token: aliceToken });
    expect(stream.status).toBe(200);
    expect(stream.ended).toBe(true);
    expect(stream.events).toEqual([
      {
        id: undefined,
        event: 'interrupted',
        data: {
          sequence: null,
          type: 'interrupted',
          eventId: null,
          at: expect.any(Number),
          data: { reason: 'no-journal', wording: 'neutral', message: MARKER_WORDING.neutral },
        },
      },
      {
        id: undefined,
        event: 'end',
        data: { reason: 'no-journal', terminalState: 'interrupted-by-crash' },
      },
    ]);

    // The transcript: the user's turn (E1) above one final, neutral marker for the run.
    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages).toHaveLength(2);
    expect(session.messages[0]).toMatchObject({
      role: 'user',
      content: 'Are you there?',
      recovered: true,
    });
    expect(session.messages[1]).toMatchObject({
      content: MARKER_WORDING.neutral,
      marker: { type: 'interrupted', wording: 'neutral', runId },
    });

    // The run id keeps resolving, and a reconnect ends at once.
    const after = await call(second.url, runUrl, { token: aliceToken });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body).toMatchObject({
      run: { runId, exists: false },
      turn: { pending: false, marker: { type: 'interrupted', wording: 'neutral' } },
    });
    const again = await readEvents(`${second.url}${eventsUrl}`, { token: aliceToken });
    expect(again.events.map((event) => event.event)).toEqual(['interrupted', 'end']);

    // The session takes the next message.
    const next = await sendMessage(second.url, aliceToken, sessionId, 'Still there?');
    expect(next.runId).not.toBe(runId);
    const cancelled = await call(second.url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: { runId: next.runId },
    });
    expect(cancelled.body).toMatchObject({ cancelled: true });
    expect((await call(second.url, runUrl, { token: aliceToken })).status).toBe(200);

    // Until the session is deleted.
    const deleted = await call(second.url, `/api/sessions/${sessionId}`, {
      token: aliceToken,
      method: 'DELETE',
    });
    expect(deleted.status).toBe(204);
    expect((await call(second.url, runUrl, { token: aliceToken })).status).toBe(404);
    await second.kill('SIGTERM');
  });
});
