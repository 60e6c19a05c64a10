import type { IncomingMessage, ServerResponse } from 'node:http';
import { chatIdOfSession, loadChat, type ResumableStreamContext } from '@keepsake/ai-sdk';
import type { SessionStore } from '@keepsake/core';
import {
  convertToModelMessages,
  isStepCount,
  pipeUIMessageStreamToResponse,
  streamText,
  toUIMessageStream,
  type UIMessage,
} from 'ai';
import type { ChatServerConfig } from './config.js';
import { HttpError, readJson, sendJson } from './http-helpers.js';
import { scriptedModel, tools } from './scripted-model.js';

export interface ChatRoutes {
  store: SessionStore;
  streams: ResumableStreamContext;
  config: ChatServerConfig;
}

/**
 * The API `useChat({ resume: true })` talks to, plus two reads for the page:
 * - `POST /api/chat` `{ id, message, trigger? }`: stores the question, streams the answer;
 * - `GET /api/chat/:id/stream`: the answer the chat waits for, replayed, or 204;
 * - `POST /api/chat/:id/stop`: stops it, keeping the partial answer;
 * - `GET /api/chat/:id`: the chat's messages; `GET /api/chats`: the chats, newest first.
 * Returns false for a path that is not the API's.
 */
export async function handleApi(
  routes: ChatRoutes,
  request: IncomingMessage,
  response: ServerResponse,
  pathname: string,
): Promise<boolean> {
  const { store, streams, config } = routes;
  const method = request.method ?? 'GET';
  if (method === 'POST' && pathname === '/api/chat') {
    const body = (await readJson(request)) as {
      id?: unknown;
      message?: unknown;
      trigger?: unknown;
    };
    if (typeof body?.id !== 'string') throw new HttpError(400, 'The body needs the chat `id`');
    const message = body.message as UIMessage;
    const trigger = body.trigger === 'regenerate-message' ? 'regenerate-message' : 'submit-message';
    const question =
      message?.parts?.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
    const stream = await streams.resumableStream(
      body.id,
      async ({ messages, abortSignal }) =>
        toUIMessageStream({
          stream: streamText({
            model: scriptedModel(question, {
              delayMs: config.tokenDelayMs,
              words: config.answerWords,
            }),
            messages: await convertToModelMessages(messages),
            tools,
            stopWhen: isStepCount(2),
            abortSignal,
          }).stream,
          sendSources: true,
        }),
      { message, trigger },
    );
    pipeUIMessageStreamToResponse({ response, stream });
    return true;
  }
  if (method === 'GET' && pathname === '/api/chats') {
    const page = await store.list({ limit: 50 });
    sendJson(response, 200, {
      chats: page.sessions.map((session) => ({
        id: chatIdOfSession(session.id),
        title: session.title,
        updatedAt: session.updatedAt,
      })),
    });
    return true;
  }
  const match = /^\/api\/chat\/([^/]+)(\/stream|\/stop)?$/.exec(pathname);
  if (match === null) return false;
  const chatId = decodeChatId(match[1]!);
  if (method === 'GET' && match[2] === '/stream') {
    const stream = await streams.resumeExistingStream(chatId);
    if (stream === null) response.writeHead(204).end();
    else pipeUIMessageStreamToResponse({ response, stream });
    return true;
  }
  if (method === 'POST' && match[2] === '/stop') {
    sendJson(response, 200, await streams.stopStream(chatId));
    return true;
  }
  if (method === 'GET' && match[2] === undefined) {
    sendJson(response, 200, { messages: await loadChat(store, chatId) });
    return true;
  }
  throw new HttpError(405, `${method} is not allowed on ${pathname}`);
}

function decodeChatId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'The chat id in the URL is not valid percent-encoding');
  }
}
