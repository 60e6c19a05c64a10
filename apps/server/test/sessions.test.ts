import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, createSession, getSession } from './helpers/chat-flows.js';
import { call } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

let harness: TestServer;
let url: string;

beforeAll(async () => {
  harness = await startTestServer();
  url = harness.url;
});
afterAll(() => harness.close());

describe('sessions', () => {
  it('creates a session and reads it back', async () => {
    const created = await call(url, '/api/sessions', {
      token: aliceToken,
      method: 'POST',
      body: { title: 'Trip planning' },
    });
    expect(created.status).toBe(201);
    expect(created.body.session).toMatchObject({ title: 'Trip planning', messages: [] });
    const read = await call(url, `/api/sessions/${created.body.session.id}`, {
      token: aliceToken,
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      session: { id: created.body.session.id, title: 'Trip planning' },
      activeRunId: null,
    });
  });

  it('B7: lists sessions newest first, paginated by cursor', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      ids.push(await createSession(url, aliceToken, `page-${index}`));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : '?limit=2';
      const page = await call(url, `/api/sessions${query}`, { token: aliceToken });
      expect(page.status).toBe(200);
      expect(page.body.sessions.length).toBeLessThanOrEqual(2);
      for (const summary of page.body.sessions) {
        expect(Object.keys(summary)).not.toContain('messages');
        seen.push(summary.id);
      }
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 20);
    const ours = seen.filter((id) => ids.includes(id));
    expect(ours).toEqual([...ids].reverse());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('renames a session (title)', async () => {
    const id = await createSession(url, aliceToken, 'Old');
    const renamed = await call(url, `/api/sessions/${id}`, {
      token: aliceToken,
      method: 'PATCH',
      body: { title: '  New title  ' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.session.title).toBe('New title');
    expect((await getSession(url, aliceToken, id)).title).toBe('New title');
  });

  it('B8: deletes a session and its journals; it is never listed again', async () => {
    const id = await createSession(url, aliceToken, 'Doomed');
    await chat(url, aliceToken, id, 'hello there');
    const deleted = await call(url, `/api/sessions/${id}`, { token: aliceToken, method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect((await call(url, `/api/sessions/${id}`, { token: aliceToken })).status).toBe(404);
    const again = await call(url, `/api/sessions/${id}`, { token: aliceToken, method: 'DELETE' });
    expect(again.status).toBe(404);
    const list = await call(url, '/api/sessions?limit=200', { token: aliceToken });
    expect(list.body.sessions.map((summary: { id: string }) => summary.id)).not.toContain(id);
  });

  it('B8: deletes a session that never had a run', async () => {
    const id = await createSession(url, aliceToken, 'Empty');
    const deleted = await call(url, `/api/sessions/${id}`, { token: aliceToken, method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect((await call(url, `/api/sessions/${id}`, { token: aliceToken })).status).toBe(404);
  });

  it('answers 404 with a typed code for a session that does not exist', async () => {
    const response = await call(url, '/api/sessions/no-such-session', { token: aliceToken });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  it('G: starting a new session commits the previous session memory at the boundary', async () => {
    const first = await createSession(url, aliceToken, 'About me');
    await chat(url, aliceToken, first, 'My name is Ada. I like hiking in the Alps.');
    const before = await call(url, '/api/memory', { token: aliceToken });
    expect(
      before.body.records.some((record: { sessionId: string }) => record.sessionId === first),
    ).toBe(false);

    const next = await call(url, '/api/sessions', {
      token: aliceToken,
      method: 'POST',
      body: { previousSessionId: first },
    });
    expect(next.status).toBe(201);
    // The commit runs in the background; wait for it instead of polling.
    await harness.server.memoryBoundary.settle();
    const after = await call(url, '/api/memory', { token: aliceToken });
    const record = after.body.records.find(
      (entry: { sessionId: string }) => entry.sessionId === first,
    );
    expect(record.items).toEqual(['My name is Ada.', 'I like hiking in the Alps.']);
    expect(record).toMatchObject({ fromGeneration: 1, toGeneration: 1 });

    // G2: a second boundary with nothing new is a no-op: no second record.
    await call(url, '/api/sessions', {
      token: aliceToken,
      method: 'POST',
      body: { previousSessionId: first },
    });
    await harness.server.memoryBoundary.settle();
    const memory = await call(url, '/api/memory', { token: aliceToken });
    expect(
      memory.body.records.filter((entry: { sessionId: string }) => entry.sessionId === first),
    ).toHaveLength(1);
  });
});
