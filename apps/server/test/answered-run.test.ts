import { join } from 'node:path';
import { createMessage, createSessionStore, type StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession } from './helpers/chat-flows.js';
import { call, readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

let harness: TestServer;

beforeAll(async () => {
  harness = await startTestServer({ config: { store: { recoveryGraceMs: 200 } } });
});
afterAll(async () => {
  await harness.close();
});

/**
 * Another instance on the same data directory completes a run and "dies" where the journal's
 * `done` record would be written, after the completed turn was saved (FAULT INJECTION: its
 * adapter refuses that one append, and the instance is dropped).
 */
async function completeWithoutSeal(sessionId: string): Promise<string> {
  const adapter: StorageAdapter = fsAdapter({
    directory: join(harness.dataDirectory, 'alice'),
  });
  const appendLog = adapter.appendLog.bind(adapter);
  adapter.appendLog = async (...args: Parameters<StorageAdapter['appendLog']>) => {
    if (args[2].some((record) => record.text.includes('"type":"done"'))) {
      throw new Error('FAULT INJECTION: the instance died before sealing the journal');
    }
    return appendLog(...args);
  };
  const store = createSessionStore({ adapter });
  const run = await store.beginRun(sessionId, {
    userMessage: createMessage({ role: 'user', content: 'Are you there?' }),
  });
  for (const text of ['Yes, ', 'still ', 'here.']) {
    await run.append({ type: 'token', data: { text } });
  }
  await expect(run.complete()).rejects.toThrow(/FAULT INJECTION/);
  return run.runId;
}

describe('a run whose answer is stored but whose journal never got its ending (E5, F1)', () => {
  it('E5: its stream ends as completed and its run reports completed, on an instance that never ran it', async () => {
    const { url } = harness;
    const sessionId = await createSession(url, aliceToken, 'Answered, never sealed');
    const runId = await completeWithoutSeal(sessionId);
    const session = await getSession(url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1)).toMatchObject({ role: 'assistant', runId });

    const stream = await readEvents(`${url}/api/sessions/${sessionId}/runs/${runId}/events`, {
      token: aliceToken,
    });
    expect(stream.ended).toBe(true);
    const records = recordsOf(stream.events);
    expect(records.map((event) => event.event)).toEqual(['token', 'token', 'token', 'done']);
    expect(stream.events.at(-1)).toMatchObject({
      event: 'end',
      data: { reason: 'terminal', terminalState: 'completed' },
    });

    const run = await call(url, `/api/sessions/${sessionId}/runs/${runId}`, { token: aliceToken });
    expect(run.body).toMatchObject({ run: { terminalState: 'completed', lastEventType: 'done' } });
    const found = await call(url, `/api/runs/${runId}`, { token: aliceToken });
    expect(found.body).toMatchObject({ run: { terminalState: 'completed' } });
  });

  it('E5: GET of the run alone seals it, and the transcript is unchanged', async () => {
    const { url } = harness;
    const sessionId = await createSession(url, aliceToken, 'Answered, looked up by id');
    const runId = await completeWithoutSeal(sessionId);
    const before = await getSession(url, aliceToken, sessionId);
    const found = await call(url, `/api/runs/${runId}`, { token: aliceToken });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({
      run: { terminalState: 'completed', lastEventType: 'done' },
    });
    const after = await getSession(url, aliceToken, sessionId);
    expect(after.messages).toEqual(before.messages);
  });
});
