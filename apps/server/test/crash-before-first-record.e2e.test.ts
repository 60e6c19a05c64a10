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
  it("E1, F1, F2, D4: the run id still resolves, its stream is the repair's crash record and end, the next message is accepted", async () => {
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
    // Before or after this instance repaired the turn, the run id resolves (E8).
    const before = await call(second.url, runUrl, { token: aliceToken });
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    expect(before.body.run).toMatchObject({ runId });

    // The stream opens at once (a client can tell the server is there).
    const opened = await fetch(`${second.url}${eventsUrl}`, {
      headers: { authorization: `Bearer ${aliceToken}`, accept: 'text/event-stream' },
    });
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toContain('text/event-stream');
    await opened.body?.cancel();

    // F1, D4: the repair sealed the run's journal with its crash record, creating the journal
    // since the run never wrote (a run that was only slow is refused at its first append):
    // the stream is that one record, then the end of a run that ended with no output.
    const stream = await readEvents(`${second.url}${eventsUrl}`, { token: aliceToken });
    expect(stream.status).toBe(200);
    expect(stream.ended).toBe(true);
    expect(stream.events.map((event) => event.event)).toEqual(['interrupted', 'end']);
    expect(stream.events[0]).toMatchObject({ id: '1', data: { sequence: 1 } });
    expect(stream.events[1]?.data).toMatchObject({ terminalState: 'interrupted-by-crash' });

    // The transcript: the user's turn (E1) above one interrupted marker for the run, which
    // says output may still show (a journal late to arrive, F2) until a grace later.
    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages).toHaveLength(2);
    expect(session.messages[0]).toMatchObject({
      role: 'user',
      content: 'Are you there?',
      recovered: true,
    });
    expect(session.messages[1]).toMatchObject({ marker: { type: 'interrupted', runId } });
    expect(['pending-retry', 'neutral']).toContain(session.messages[1].marker.wording);

    // The run id keeps resolving, and a reconnect ends at once.
    const after = await call(second.url, runUrl, { token: aliceToken });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body).toMatchObject({
      run: { runId, exists: true, lastSequence: 1, terminalState: 'interrupted-by-crash' },
      turn: { pending: false, marker: { type: 'interrupted' } },
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
