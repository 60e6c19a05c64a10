import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { createGatedAgent } from './helpers/gated-agent.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken, bobToken, startTestServer, type TestServer } from './helpers/test-server.js';

/**
 * Each token is its own namespace. Bob holds a valid token and Alice's ids, and still can
 * never read, list, stream, change, cancel or delete Alice's sessions: to him they do not exist.
 */
let harness: TestServer;
let url: string;
const gated = createGatedAgent();
let aliceSession: string;
let aliceRun: string;

beforeAll(async () => {
  harness = await startTestServer({ agent: gated.agent });
  url = harness.url;
  aliceSession = await createSession(url, aliceToken, 'Alice private');
  aliceRun = (await sendMessage(url, aliceToken, aliceSession, 'secret plans')).runId;
  gated.push({ type: 'token', text: 'top secret' });
});
afterAll(() => harness.close());

async function expectAliceUntouched() {
  const session = await getSession(url, aliceToken, aliceSession);
  expect(session.title).toBe('Alice private');
  expect(session.pending?.streamId).toBe(aliceRun);
}

describe('authorization isolation between tokens', () => {
  it('rejects a missing or unknown token with 401 on every API route', async () => {
    const routes: Array<[string, string]> = [
      ['GET', '/api/sessions'],
      ['POST', '/api/sessions'],
      ['GET', `/api/sessions/${aliceSession}`],
      ['PATCH', `/api/sessions/${aliceSession}`],
      ['DELETE', `/api/sessions/${aliceSession}`],
      ['POST', `/api/sessions/${aliceSession}/messages`],
      ['GET', `/api/sessions/${aliceSession}/runs/${aliceRun}`],
      ['GET', `/api/sessions/${aliceSession}/runs/${aliceRun}/events`],
      ['POST', `/api/sessions/${aliceSession}/cancel`],
      ['POST', `/api/sessions/${aliceSession}/undo`],
      ['POST', `/api/sessions/${aliceSession}/retry`],
      ['GET', '/api/memory'],
      ['GET', '/api/me'],
    ];
    for (const token of [null, 'not-a-real-token-at-all', `${aliceToken}x`]) {
      for (const [method, path] of routes) {
        const response = await call(url, path, { token, method });
        expect(response.status, `${method} ${path} with ${token}`).toBe(401);
        expect(response.body.error.code).toBe('unauthorized');
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }
    }
    await expectAliceUntouched();
  });

  it('list: another token never lists the session', async () => {
    const bobs = await call(url, '/api/sessions?limit=200', { token: bobToken });
    expect(bobs.status).toBe(200);
    expect(bobs.body.sessions.map((summary: { id: string }) => summary.id)).not.toContain(
      aliceSession,
    );
    const alices = await call(url, '/api/sessions?limit=200', { token: aliceToken });
    expect(alices.body.sessions.map((summary: { id: string }) => summary.id)).toContain(
      aliceSession,
    );
  });

  it('get: another token gets 404 for the same id', async () => {
    const response = await call(url, `/api/sessions/${aliceSession}`, { token: bobToken });
    expect(response.status).toBe(404);
    expect(JSON.stringify(response.body)).not.toContain('secret');
  });

  it('rename: another token cannot rename it', async () => {
    const response = await call(url, `/api/sessions/${aliceSession}`, {
      token: bobToken,
      method: 'PATCH',
      body: { title: 'pwned' },
    });
    expect(response.status).toBe(404);
    await expectAliceUntouched();
  });

  it('send: another token cannot start a run in it', async () => {
    const response = await call(url, `/api/sessions/${aliceSession}/messages`, {
      token: bobToken,
      method: 'POST',
      body: { content: 'let me in' },
    });
    expect(response.status).toBe(404);
    await expectAliceUntouched();
  });

  it('stream: another token cannot read the run events or summary', async () => {
    const stream = await readEvents(`${url}/api/sessions/${aliceSession}/runs/${aliceRun}/events`, {
      token: bobToken,
    });
    expect(stream.status).toBe(404);
    expect(stream.events).toEqual([]);
    const summary = await call(url, `/api/sessions/${aliceSession}/runs/${aliceRun}`, {
      token: bobToken,
    });
    expect(summary.status).toBe(404);
  });

  it('cancel: another token cannot cancel the run', async () => {
    const response = await call(url, `/api/sessions/${aliceSession}/cancel`, {
      token: bobToken,
      method: 'POST',
      body: { runId: aliceRun },
    });
    expect(response.status).toBe(404);
    await expectAliceUntouched();
  });

  it('undo and retry: another token cannot shrink it', async () => {
    for (const action of ['undo', 'retry']) {
      const response = await call(url, `/api/sessions/${aliceSession}/${action}`, {
        token: bobToken,
        method: 'POST',
      });
      expect(response.status).toBe(404);
    }
    await expectAliceUntouched();
  });

  it('memory: another token never sees the extracted memory', async () => {
    const next = await call(url, '/api/sessions', {
      token: bobToken,
      method: 'POST',
      body: { previousSessionId: aliceSession },
    });
    expect(next.status).toBe(201);
    await harness.server.memoryBoundary.settle();
    const bobs = await call(url, '/api/memory', { token: bobToken });
    expect(JSON.stringify(bobs.body)).not.toContain(aliceSession);
  });

  it('delete: another token cannot delete it', async () => {
    const response = await call(url, `/api/sessions/${aliceSession}`, {
      token: bobToken,
      method: 'DELETE',
    });
    expect(response.status).toBe(404);
    await expectAliceUntouched();
    const me = await call(url, '/api/me', { token: bobToken });
    expect(me.body).toEqual({ namespace: 'bob' });
  });

  it('open mode (no tokens configured): one default namespace, no token needed', async () => {
    const open = await startTestServer({ tokens: false });
    try {
      expect((await call(open.url, '/api/info')).body.auth).toBe('open');
      expect((await call(open.url, '/api/me')).body).toEqual({ namespace: 'default' });
      const created = await call(open.url, '/api/sessions', { method: 'POST', body: {} });
      expect(created.status).toBe(201);
      const listed = await call(open.url, '/api/sessions');
      expect(listed.body.sessions.map((summary: { id: string }) => summary.id)).toEqual([
        created.body.session.id,
      ]);
    } finally {
      await open.close();
    }
  });

  it('the owner still can: the run streams to Alice and completes', async () => {
    gated.finish();
    const stream = await readEvents(`${url}/api/sessions/${aliceSession}/runs/${aliceRun}/events`, {
      token: aliceToken,
    });
    expect(stream.ended).toBe(true);
    expect(stream.events[0]?.data.data.text).toBe('top secret');
  });
});
