import { join } from 'node:path';
import { fsAdapter } from '@keepsake/fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { createGatedAgent } from './helpers/gated-agent.js';
import { call, readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

let scripted: TestServer;
let gatedServer: TestServer;
const gated = createGatedAgent();

beforeAll(async () => {
  scripted = await startTestServer();
  gatedServer = await startTestServer({ agent: gated.agent });
});
afterAll(async () => {
  await scripted.close();
  await gatedServer.close();
});

/** Waits for the server's runs to finish their bookkeeping (a failure is written after the stream ends). */
async function runsSettled(harness: TestServer) {
  await Promise.all(harness.server.namespaces.all().map((namespace) => namespace.runs.settle()));
}

describe('runs over SSE', () => {
  it('E2: streams every event with its journal sequence as the SSE id, then completes', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    const { runId, stream } = await chat(url, aliceToken, sessionId, 'What is durable?');
    const records = recordsOf(stream.events);
    expect(records.map((event) => Number(event.id))).toEqual(
      records.map((_event, index) => index + 1),
    );
    expect(records.map((event) => event.event)).toEqual(
      expect.arrayContaining(['reasoning', 'tool', 'tool_result', 'token', 'done']),
    );
    expect(records.at(-1)?.event).toBe('done');
    expect(stream.events.at(-1)).toMatchObject({
      event: 'end',
      data: { reason: 'terminal', terminalState: 'completed' },
    });

    const session = await getSession(url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    const answer = records
      .filter((event) => event.event === 'token')
      .map((event) => event.data.data.text)
      .join('');
    expect(session.messages[0]).toMatchObject({ role: 'user', content: 'What is durable?' });
    expect(session.messages.at(-1)).toMatchObject({ role: 'assistant', content: answer, runId });
    expect(session.toolCalls).toEqual([
      expect.objectContaining({ name: 'search_notes', done: true, runId }),
    ]);

    // E8: the run id alone is enough to find it.
    const found = await call(url, `/api/runs/${runId}`, { token: aliceToken });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({
      run: { sessionId, runId, terminalState: 'completed', lastEventType: 'done' },
      eventsUrl: `/api/sessions/${sessionId}/runs/${runId}/events`,
    });
    expect((await call(url, '/api/runs/no-such-run', { token: aliceToken })).status).toBe(404);

    const summary = await call(url, `/api/sessions/${sessionId}/runs/${runId}`, {
      token: aliceToken,
    });
    expect(summary.body.run).toMatchObject({
      terminalState: 'completed',
      lastSequence: records.length,
    });
  });

  it('E2: a reconnect with Last-Event-ID (or ?after=) gets exactly the rest of the journal', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    const { runId, stream } = await chat(url, aliceToken, sessionId, 'resume me');
    const all = recordsOf(stream.events);
    const eventsUrl = `${url}/api/sessions/${sessionId}/runs/${runId}/events`;

    const resumed = await readEvents(eventsUrl, { token: aliceToken, lastEventId: 4 });
    expect(resumed.ended).toBe(true);
    expect(recordsOf(resumed.events)).toEqual(all.slice(4));

    const byQuery = await readEvents(`${eventsUrl}?after=4`, { token: aliceToken });
    expect(recordsOf(byQuery.events)).toEqual(all.slice(4));

    const atEnd = await readEvents(eventsUrl, { token: aliceToken, lastEventId: all.length });
    expect(atEnd.events).toEqual([
      expect.objectContaining({
        event: 'end',
        data: expect.objectContaining({ terminalState: 'completed' }),
      }),
    ]);
  });

  it('follows a live run as it streams and resumes mid-stream without gaps or repeats', async () => {
    const { url } = gatedServer;
    const sessionId = await createSession(url, aliceToken);
    const { eventsUrl } = await sendMessage(url, aliceToken, sessionId, 'stream slowly');
    gated.push({ type: 'token', text: 'one' }, { type: 'token', text: ' two' });
    const first = await readEvents(`${url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length === 2,
    });
    expect(first.events.map((event) => event.id)).toEqual(['1', '2']);

    const rest = readEvents(`${url}${eventsUrl}`, { token: aliceToken, lastEventId: 2 });
    gated.push({ type: 'token', text: ' three' });
    gated.finish();
    const resumed = await rest;
    expect(recordsOf(resumed.events).map((event) => [event.id, event.event])).toEqual([
      ['3', 'token'],
      ['4', 'done'],
    ]);
    expect((await getSession(url, aliceToken, sessionId)).messages.at(-1).content).toBe(
      'one two three',
    );
  });

  it('E2, E3: a damaged record in the middle of a live journal is a warning event, and the stream goes on to the end', async () => {
    const { url, dataDirectory } = gatedServer;
    const sessionId = await createSession(url, aliceToken);
    const { runId, eventsUrl } = await sendMessage(url, aliceToken, sessionId, 'survive damage');
    gated.push({ type: 'token', text: 'before' });
    await readEvents(`${url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length === 1,
    });
    // Another writer of the same directory (as a second server process would be) stores a
    // record at sequence 2 that is not a journal record.
    const raw = fsAdapter({ directory: join(dataDirectory, 'alice') });
    await raw.open();
    try {
      const planted = await raw.appendLog(
        sessionId,
        runId,
        [{ sequence: 2, text: '{"not a journal record' }],
        { durability: 'each' },
      );
      expect(planted.ok).toBe(true);
    } finally {
      await raw.close();
    }
    gated.push({ type: 'token', text: ' after' });
    gated.finish();
    const stream = await readEvents(`${url}${eventsUrl}`, { token: aliceToken });
    expect(stream.events.map((event) => [event.id, event.event])).toEqual([
      ['1', 'token'],
      [undefined, 'warning'],
      ['3', 'token'],
      ['4', 'done'],
      [undefined, 'end'],
    ]);
    expect(stream.events[1]!.data).toMatchObject({
      sequence: null,
      type: 'warning',
      data: {
        reason: 'journal-records-skipped',
        invalidRecords: [{ sequence: 2 }],
        lastSequence: 2,
        message: expect.stringContaining('record 2 skipped'),
      },
    });
    expect(stream.events.at(-1)!.data).toEqual({
      reason: 'terminal',
      terminalState: 'completed',
      marker: null,
    });
    expect((await getSession(url, aliceToken, sessionId)).messages.at(-1).content).toBe(
      'before after',
    );
  });

  it('E7: a second message while a run owns the session is a 409 session_busy', async () => {
    const { url } = gatedServer;
    const sessionId = await createSession(url, aliceToken);
    const { eventsUrl } = await sendMessage(url, aliceToken, sessionId, 'first');
    const second = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'second' },
    });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('session_busy');
    gated.finish();
    expect((await readEvents(`${url}${eventsUrl}`, { token: aliceToken })).ended).toBe(true);
  });

  it('E6: cancel keeps the user turn and the partial output above one cancel marker', async () => {
    const { url } = gatedServer;
    const sessionId = await createSession(url, aliceToken);
    const { runId, eventsUrl } = await sendMessage(url, aliceToken, sessionId, 'cancel me');
    gated.push({ type: 'token', text: 'partial ' }, { type: 'token', text: 'answer' });
    const stream = readEvents(`${url}${eventsUrl}`, { token: aliceToken });
    await readEvents(`${url}${eventsUrl}`, {
      token: aliceToken,
      until: (_event, events) => events.length === 2,
    });

    const cancelled = await call(url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: { runId },
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ cancelled: true, sessionId, runId });
    const events = (await stream).events;
    expect(events.at(-2)?.event).toBe('cancel');
    expect(events.at(-1)?.data.terminalState).toBe('interrupted-by-user');
    expect(gated.lastSignal?.aborted).toBe(true);

    // The cancel answered once the transcript was durable (E6): no waiting needed.
    const session = await getSession(url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.map((message: { role: string }) => message.role)).toEqual([
      'user',
      'assistant',
      'assistant',
    ]);
    expect(session.messages[1]).toMatchObject({ content: 'partial answer', partial: true });
    expect(session.messages[2].marker).toMatchObject({ type: 'cancelled' });

    const again = await call(url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: { runId },
    });
    expect(again.body).toEqual({ cancelled: false, reason: 'no-pending-turn' });
  });

  it('E6: a failing agent ends the run with an error marker and terminal state errored', async () => {
    const { url } = gatedServer;
    const sessionId = await createSession(url, aliceToken);
    const { eventsUrl } = await sendMessage(url, aliceToken, sessionId, 'fail please');
    gated.push({ type: 'token', text: 'so far' });
    gated.fail(new Error('model exploded'));
    const stream = await readEvents(`${url}${eventsUrl}`, { token: aliceToken });
    expect(stream.events.at(-1)?.data.terminalState).toBe('errored');
    await runsSettled(gatedServer);
    const session = await getSession(url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    expect(session.messages.at(-1).marker).toMatchObject({ type: 'errored' });
    expect(session.messages.at(-2)).toMatchObject({ content: 'so far', partial: true });
  });

  it('B5: undo removes the last turn deliberately and keeps the revision before it', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    await chat(url, aliceToken, sessionId, 'keep this');
    await chat(url, aliceToken, sessionId, 'undo this');
    const before = await getSession(url, aliceToken, sessionId);
    const undone = await call(url, `/api/sessions/${sessionId}/undo`, {
      token: aliceToken,
      method: 'POST',
    });
    expect(undone.status).toBe(200);
    const contents = undone.body.session.messages
      .filter((message: { role: string }) => message.role === 'user')
      .map((message: { content: string }) => message.content);
    expect(contents).toEqual(['keep this']);
    const namespace = scripted.server.namespaces.resolve(aliceToken)!;
    expect(await namespace.store.retainedRevisions(sessionId)).toContain(before.revision);
    const reloaded = await getSession(url, aliceToken, sessionId);
    expect(reloaded.messages).toHaveLength(undone.body.session.messages.length);
  });

  it('B5: retry replaces the last answer with a new run for the same user message', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    const { runId: firstRun } = await chat(url, aliceToken, sessionId, 'try again');
    const retried = await call(url, `/api/sessions/${sessionId}/retry`, {
      token: aliceToken,
      method: 'POST',
    });
    expect(retried.status).toBe(202);
    expect(retried.body.runId).not.toBe(firstRun);
    const stream = await readEvents(`${url}${retried.body.eventsUrl}`, { token: aliceToken });
    expect(stream.ended).toBe(true);
    const session = await getSession(url, aliceToken, sessionId);
    const users = session.messages.filter((message: { role: string }) => message.role === 'user');
    expect(users.map((message: { content: string }) => message.content)).toEqual(['try again']);
    expect(session.messages.some((message: { runId?: string }) => message.runId === firstRun)).toBe(
      false,
    );
    expect(
      session.toolCalls.every((call: { runId: string }) => call.runId === retried.body.runId),
    ).toBe(true);
  });

  it('undo or retry with no user turn is a 400 with a clear message', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    for (const action of ['undo', 'retry']) {
      const response = await call(url, `/api/sessions/${sessionId}/${action}`, {
        token: aliceToken,
        method: 'POST',
      });
      expect(response.status).toBe(400);
      expect(response.body.error.message).toMatch(/no user turn/);
    }
  });

  it('answers 404 for the events of a run that does not exist', async () => {
    const { url } = scripted;
    const sessionId = await createSession(url, aliceToken);
    const stream = await readEvents(`${url}/api/sessions/${sessionId}/runs/nope/events`, {
      token: aliceToken,
    });
    expect(stream.status).toBe(404);
    expect(stream.errorBody.error.code).toBe('not_found');
  });
});
