import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession } from './helpers/chat-flows.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

/**
 * Issue 41 item 4: a send whose reply was lost can be sent again. The same Idempotency-Key
 * (or client-chosen message id) answers the run the first send started, 200 instead of 202,
 * never a second turn, on this instance or another one over the same backend (E1: core
 * refuses a second message with an id the session has); the same key with other content is
 * a 409 that changes nothing.
 */
let first: TestServer;
let second: TestServer;

beforeAll(async () => {
  first = await startTestServer();
  // A second instance over the same directory, as two server processes behind a balancer.
  second = await startTestServer({
    config: { backend: { kind: 'fs', directory: first.dataDirectory } },
  });
});
afterAll(async () => {
  await second.close();
  await first.close();
});

function send(server: TestServer, sessionId: string, body: object, key?: string) {
  return call(server.url, `/api/sessions/${sessionId}/messages`, {
    token: aliceToken,
    method: 'POST',
    body,
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });
}

async function followToEnd(server: TestServer, eventsUrl: string) {
  const stream = await readEvents(`${server.url}${eventsUrl}`, { token: aliceToken });
  expect(stream.ended).toBe(true);
}

function userTurns(session: { messages: Array<{ role: string; content: unknown }> }) {
  return session.messages.filter((message) => message.role === 'user').map((m) => m.content);
}

describe('POST …/messages with an Idempotency-Key', () => {
  it('a retry while the run streams and after it ended answers the same run, once (E1)', async () => {
    const sessionId = await createSession(first.url, aliceToken);
    const original = await send(first, sessionId, { content: 'hello once' }, 'key-1');
    expect(original.status).toBe(202);
    const whileRunning = await send(second, sessionId, { content: 'hello once' }, 'key-1');
    expect(whileRunning.status).toBe(200);
    expect(whileRunning.headers.get('idempotent-replayed')).toBe('true');
    expect(whileRunning.body).toEqual(original.body);
    await followToEnd(first, original.body.eventsUrl);
    const afterEnd = await send(second, sessionId, { content: 'hello once' }, 'key-1');
    expect(afterEnd.status).toBe(200);
    expect(afterEnd.body).toEqual(original.body);
    const session = await getSession(first.url, aliceToken, sessionId);
    expect(userTurns(session)).toEqual(['hello once']);
    expect(session.messages.at(-1).role).toBe('assistant');
  });

  it('the same key with other content is 409 idempotency_key_reused and adds nothing', async () => {
    const sessionId = await createSession(first.url, aliceToken);
    const original = await send(first, sessionId, { content: 'first words' }, 'key-2');
    await followToEnd(first, original.body.eventsUrl);
    const reused = await send(second, sessionId, { content: 'other words' }, 'key-2');
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect(userTurns(await getSession(first.url, aliceToken, sessionId))).toEqual(['first words']);
    // A new key is a new message.
    const next = await send(first, sessionId, { content: 'other words' }, 'key-3');
    expect(next.status).toBe(202);
    expect(next.body.runId).not.toBe(original.body.runId);
    await followToEnd(first, next.body.eventsUrl);
  });

  it('concurrent sends of one key on two instances start one turn', async () => {
    const sessionId = await createSession(first.url, aliceToken);
    const replies = await Promise.all(
      [first, second, first, second].map((server) =>
        send(server, sessionId, { content: 'raced' }, 'key-race'),
      ),
    );
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 200, 200, 202]);
    const runIds = new Set(replies.map((reply) => reply.body.runId));
    expect(runIds.size).toBe(1);
    await followToEnd(first, replies[0]!.body.eventsUrl);
    expect(userTurns(await getSession(second.url, aliceToken, sessionId))).toEqual(['raced']);
  });

  it('keys are per session: one key in two sessions is two sends', async () => {
    const [a, b] = await Promise.all([
      createSession(first.url, aliceToken),
      createSession(first.url, aliceToken),
    ]);
    const inA = await send(first, a, { content: 'same' }, 'shared-key');
    const inB = await send(first, b, { content: 'same' }, 'shared-key');
    expect([inA.status, inB.status]).toEqual([202, 202]);
    await followToEnd(first, inA.body.eventsUrl);
    await followToEnd(first, inB.body.eventsUrl);
  });
});

describe('POST …/messages with a client-chosen message id', () => {
  it('keeps the id, answers a retry with the same run, refuses other content with 409', async () => {
    const sessionId = await createSession(first.url, aliceToken);
    const original = await send(first, sessionId, { content: 'mine', id: 'client-msg-1' });
    expect(original.status, JSON.stringify(original.body)).toBe(202);
    await followToEnd(first, original.body.eventsUrl);
    const retry = await send(second, sessionId, { content: 'mine', id: 'client-msg-1' });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(original.body);
    const other = await send(second, sessionId, { content: 'not mine', id: 'client-msg-1' });
    expect(other.status).toBe(409);
    const session = await getSession(first.url, aliceToken, sessionId);
    expect(session.messages.filter((m: { id: string }) => m.id === 'client-msg-1')).toHaveLength(1);
  });
});

describe('bad input', () => {
  it('a key with a space, a key over 255 characters, a bad id, or both at once are 400s', async () => {
    const sessionId = await createSession(first.url, aliceToken);
    for (const [body, key, says] of [
      [{ content: 'x' }, 'has space', /idempotency-key: must be 1–255 printable ASCII/],
      [{ content: 'x' }, 'k'.repeat(256), /idempotency-key: must be 1–255 printable ASCII/],
      [{ content: 'x', id: 'no/slash' }, undefined, /id: must be 1–128 characters/],
      [{ content: 'x', id: 'fine' }, 'and-a-key', /either an Idempotency-Key header or a message/],
    ] as const) {
      const reply = await send(first, sessionId, body, key);
      expect(reply.status, JSON.stringify({ body, key })).toBe(400);
      expect(reply.body.error.code).toBe('invalid_input');
      expect(reply.body.error.message).toMatch(says);
    }
    expect((await getSession(first.url, aliceToken, sessionId)).messages).toEqual([]);
  });
});
