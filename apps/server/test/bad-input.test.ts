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

/** The one error shape: `{ error: { code, message, details? } }` and nothing else. */
function expectClientError(response: { status: number; body: Json }, status: number, code: string) {
  const shown = JSON.stringify(response.body).slice(0, 400);
  expect(response.status, shown).toBe(status);
  expect(Object.keys(response.body), shown).toEqual(['error']);
  expect(
    Object.keys(response.body.error).filter((key) => key !== 'details'),
    shown,
  ).toEqual(['code', 'message']);
  expect(response.body.error.code, shown).toBe(code);
  expect(response.body.error.message.length).toBeGreaterThan(10);
  // A message quotes client input without echoing kilobytes of it back.
  expect(response.body.error.message.length).toBeLessThan(400);
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

  it('a cursor that was not issued by the server is a 400 that names the cursor, not the adapter', async () => {
    const response = await call(url, '/api/sessions?cursor=not-a-real-cursor', {
      token: aliceToken,
    });
    expectClientError(response, 400, 'invalid_input');
    expect(response.body.error.message).toContain('cursor');
    expect(response.body.error.message).not.toMatch(/adapter/i);
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
  });

  it('an SSE request that refuses text/event-stream is a 406 in the same shape', async () => {
    const eventsUrl = `/api/sessions/${sessionId}/runs/${runId}/events`;
    for (const accept of ['application/json', 'text/event-stream;q=0, */*']) {
      const refused = await call(url, eventsUrl, { token: aliceToken, headers: { accept } });
      expectClientError(refused, 406, 'not_acceptable');
    }
    for (const accept of ['*/*', 'text/*', 'application/json, text/event-stream;q=0.5']) {
      const admitted = await readEvents(`${url}${eventsUrl}`, {
        token: aliceToken,
        headers: { accept },
      });
      expect(admitted.ended, accept).toBe(true);
    }
  });

  it('unknown routes are a 404 with a code', async () => {
    const response = await call(url, '/api/nothing-here', { token: aliceToken });
    expectClientError(response, 404, 'route_not_found');
    expectClientError(await call(url, `/${'y'.repeat(10_000)}`), 404, 'route_not_found');
    expectClientError(await call(url, '/a/../../etc/passwd'), 404, 'route_not_found');
  });

  it('A1: an over-long id is the same 400 on every method, however long', async () => {
    for (const length of [129, 513, 10_000]) {
      const id = 'x'.repeat(length);
      const requests: Array<[string, string, unknown]> = [
        ['GET', `/api/sessions/${id}`, undefined],
        ['DELETE', `/api/sessions/${id}`, undefined],
        ['PATCH', `/api/sessions/${id}`, { title: 'renamed' }],
        ['POST', `/api/sessions/${id}/messages`, { content: 'hi' }],
        ['GET', `/api/sessions/${sessionId}/runs/${id}`, undefined],
        ['GET', `/api/sessions/${sessionId}/runs/${id}/events`, undefined],
      ];
      for (const [method, path, body] of requests) {
        const response = await call(url, path, { token: aliceToken, method, body });
        expectClientError(response, 400, 'invalid_input');
      }
    }
  });

  it('a malformed percent-escape is a 400 bad_url', async () => {
    for (const path of ['/api/sessions/%zz', '/api/sessions/abc%', '/%zz']) {
      expectClientError(await call(url, path, { token: aliceToken }), 400, 'bad_url');
    }
  });

  it('a body with a prototype key is valid JSON, refused for what it is', async () => {
    const bodies = [
      '{"title":"x","__proto__":{"polluted":true}}',
      '{"title":"x","nested":{"__proto__":{}}}',
      '{"title":"x","constructor":{"prototype":{"polluted":true}}}',
    ];
    for (const rawBody of bodies) {
      const response = await call(url, '/api/sessions', {
        token: aliceToken,
        method: 'POST',
        rawBody,
        headers: { 'content-type': 'application/json' },
      });
      expectClientError(response, 400, 'invalid_input');
      expect(response.body.error.message).toMatch(/__proto__|prototype/);
      expect(response.body.error.message).not.toMatch(/not valid JSON/i);
    }
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('a text/plain body is a 415, like every content type but JSON', async () => {
    const withCharset = await call(url, '/api/sessions', {
      token: aliceToken,
      method: 'POST',
      rawBody: '{"title":"charset"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(withCharset.status).toBe(201);
    for (const contentType of ['text/plain', 'text/plain; charset=utf-8', 'application/xml']) {
      const response = await call(url, `/api/sessions/${sessionId}/messages`, {
        token: aliceToken,
        method: 'POST',
        rawBody: 'hello',
        headers: { 'content-type': contentType },
      });
      expectClientError(response, 415, 'unsupported_media_type');
    }
  });

  it('the bearer scheme name is case-insensitive (RFC 7235)', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const response = await call(url, '/api/me', {
        headers: { authorization: `${scheme} ${aliceToken}` },
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ namespace: 'alice' });
    }
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

describe('rate limiting before authentication', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ config: { server: { rateLimit: { max: 5 } } } });
  });
  afterAll(() => limited.close());

  it('limits requests without a valid token by address, so guessing tokens is limited too', async () => {
    const withoutToken: number[] = [];
    for (let index = 0; index < 10; index++) {
      withoutToken.push((await call(limited.url, '/api/sessions')).status);
    }
    expect(withoutToken).toEqual([401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
    for (let index = 0; index < 30; index++) {
      const guess = `guessed-token-${index}-0123456789abcdef`;
      const response = await call(limited.url, '/api/sessions', { token: guess });
      expectClientError(response, 429, 'rate_limited');
    }
    // A valid token has its own budget: the address's strangers do not starve it.
    expect((await call(limited.url, '/api/sessions', { token: aliceToken })).status).toBe(200);
  });
});
