import { expect } from 'vitest';
import { call, type ReadEventsResult, readEvents } from './http-client.js';

export async function createSession(url: string, token: string | null, title?: string) {
  const response = await call(url, '/api/sessions', {
    token,
    method: 'POST',
    body: title === undefined ? {} : { title },
  });
  expect(response.status).toBe(201);
  return response.body.session.id as string;
}

export async function sendMessage(
  url: string,
  token: string | null,
  sessionId: string,
  content: string,
) {
  const response = await call(url, `/api/sessions/${sessionId}/messages`, {
    token,
    method: 'POST',
    body: { content },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.body as { runId: string; eventsUrl: string; sessionId: string };
}

/** Sends a message and follows its run to the end. */
export async function chat(
  url: string,
  token: string | null,
  sessionId: string,
  content: string,
): Promise<{ runId: string; stream: ReadEventsResult }> {
  const { runId, eventsUrl } = await sendMessage(url, token, sessionId, content);
  const stream = await readEvents(`${url}${eventsUrl}`, { token });
  expect(stream.ended).toBe(true);
  return { runId, stream };
}

export async function getSession(url: string, token: string | null, sessionId: string) {
  const response = await call(url, `/api/sessions/${sessionId}`, { token });
  expect(response.status).toBe(200);
  return response.body.session;
}
