import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, createSession } from './helpers/chat-flows.js';
import { call, type Json, readEvents } from './helpers/http-client.js';
import { aliceToken, bobToken, startTestServer, type TestServer } from './helpers/test-server.js';

let harness: TestServer;
let url: string;
let sessionId: string;
let runId: string;

beforeAll(async () => {
  harness = await startTestServer({
    config: { server: { bodyLimitBytes: 2048, maxMessageChars: 100 } },
  });
  url = harness.url;
  sessionId = await createSession(url, aliceToken);
  runId = (await chat(url, aliceToken, sessionId, 'hello')).runId;
});
afterAll(() => harness.close());

function expectClientError(response: { status: number; body: Json }, status: number, code: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(response.body.error.message.length).toBeGreaterThan(10);
}

describe('bad input is a 4xx with a clear message, never a 500', () => {
  it('A1: ids that could escape a path or match a pattern are refused before any storage call', async () => {
    const bad = ['a..b', 'a.b', 'x%2Fy', '%00', 'a*', 'ü', 'x'.repeat(129)];
    for (const id of bad) {
      const response = await call(url, `/api/sessions/${id}`, { token: aliceToken });
      expectClientError(response, 400, 'invalid_input');
      expect(response.body.error.message).toContain('sessionId');
    }
    const badRun = await call(url, `/api/sessions/${sessionId}/runs/a.b`, { token: aliceToken });
    expectClientError(badRun, 400, 'invalid_input');
    const badPrevious = await call(url, '/api/sessions', {
      token: aliceToken,
      method: 'POST',
      body: { previousSessionId: '../etc' },
    });
    expectClientError(badPrevious, 400, 'invalid_input');
  });

  it('malformed JSON, a wrong content type and an oversized body', async () => {
    const malformed = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      rawBody: '{"content": ',
      headers: { 'content-type': 'application/json' },
    });
    expectClientError(malformed, 400, 'invalid_json');

    const wrongType = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      rawBody: 'content=hi',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectClientError(wrongType, 415, 'unsupported_media_type');

    const oversized = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'x'.repeat(4096) },
    });
    expectClientError(oversized, 413, 'body_too_large');
  });

  it('message content: missing, empty, not a string, too long, or with unknown fields', async () => {
    const bodies: unknown[] = [
      {},
      { content: '' },
      { content: '   \n ' },
      { content: 42 },
      { content: ['a'] },
      { content: 'x'.repeat(101) },
      { content: 'ok', role: 'system' },
      [],
      'just a string',
    ];
    for (const body of bodies) {
      const response = await call(url, `/api/sessions/${sessionId}/messages`, {
        token: aliceToken,
        method: 'POST',
        body,
      });
      expectClientError(response, 400, 'invalid_input');
    }
    const tooLong = await call(url, `/api/sessions/${sessionId}/messages`, {
      token: aliceToken,
      method: 'POST',
      body: { content: 'x'.repeat(101) },
    });
    expect(tooLong.body.error.details).toEqual([
      { path: ['content'], message: 'must be at most 100 characters' },
    ]);
  });

  it('titles, list parameters and cancel bodies are validated', async () => {
    for (const body of [{ title: '' }, { title: 7 }, { title: 'x'.repeat(201) }, {}]) {
      const response = await call(url, `/api/sessions/${sessionId}`, {
        token: aliceToken,
        method: 'PATCH',
        body,
      });
      expectClientError(response, 400, 'invalid_input');
    }
    for (const query of ['?limit=0', '?limit=abc', '?limit=1000', '?cursor=', '?sort=desc']) {
      const response = await call(url, `/api/sessions${query}`, { token: aliceToken });
      expectClientError(response, 400, 'invalid_input');
    }
    const cancel = await call(url, `/api/sessions/${sessionId}/cancel`, {
      token: aliceToken,
      method: 'POST',
      body: { runId: 'no/slash' },
    });
    expectClientError(cancel, 400, 'invalid_input');
  });

  it('a cursor that was not issued by the server is refused, not a 500', async () => {
    const response = await call(url, '/api/sessions?cursor=not-a-real-cursor', {
      token: aliceToken,
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });

  it('SSE resume positions must be sequence numbers', async () => {
    const eventsUrl = `${url}/api/sessions/${sessionId}/runs/${runId}/events`;
    const badHeader = await fetch(eventsUrl, {
      headers: { authorization: `Bearer ${aliceToken}`, 'last-event-id': 'abc' },
    });
    expect(badHeader.status).toBe(400);
    expect(((await badHeader.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_input',
    );
    const badQuery = await readEvents(`${eventsUrl}?after=-1`, { token: aliceToken });
    expect(badQuery.status).toBe(400);
    const refusesJson = await fetch(eventsUrl, {
      headers: { authorization: `Bearer ${aliceToken}`, accept: 'application/json' },
    });
    expect(refusesJson.status).toBe(406);
  });

  it('unknown routes are a 404 with a code', async () => {
    const response = await call(url, '/api/nothing-here', { token: aliceToken });
    expectClientError(response, 404, 'route_not_found');
  });
});

describe('rate limiting', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ config: { server: { rateLimit: { max: 5 } } } });
  });
  afterAll(() => limited.close());

  it('limits each token separately with 429 and a clear message', async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 7; index++) {
      statuses.push((await call(limited.url, '/api/sessions', { token: aliceToken })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const refused = await call(limited.url, '/api/sessions', { token: aliceToken });
    expectClientError(refused, 429, 'rate_limited');
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect((await call(limited.url, '/api/sessions', { token: bobToken })).status).toBe(200);
    expect((await call(limited.url, '/healthz')).status).toBe(200);
  });
});
