import {
  type ChatTurn,
  compareAnswer,
  questionFor,
  runChatLoops,
  summarizeTrial,
  type TrialFigures,
} from './chat-turns.js';
import type { ServerProcess } from './server-process.js';

/** Where a trial's clients read their runs' events, when not only from the server they send to. */
export interface FollowingOptions {
  /** Read each run's events from this instance instead (it does not own the run). */
  readonly followFrom?: ServerProcess;
  /** Also read each run's events to its end from this instance: one more follower per run. */
  readonly alsoFollowOn?: ServerProcess;
}

/**
 * The server contender's client side: N chats through the HTTP API, each following its
 * run over SSE, as the web demo does. Every trial uses fresh sessions and deletes them
 * after the check, so trials do not grow the store for the ones after.
 */
export async function httpChatTrial(
  server: ServerProcess,
  chats: number,
  durationMs: number,
  following: FollowingOptions = {},
): Promise<TrialFigures> {
  const sessionIds: string[] = [];
  for (let chat = 0; chat < chats; chat++) {
    const created = await json(server.url, '/api/sessions', 'POST', { title: `chat ${chat}` });
    sessionIds.push((created.body as { session: { id: string } }).session.id);
  }
  let busyRetries = 0;
  const run = await runChatLoops(chats, durationMs, async (chat, index) => {
    const sessionId = sessionIds[chat] as string;
    const started = performance.now();
    let sent = await sendMessage(server.url, sessionId, questionFor(chat, index));
    // The previous turn's run may still be releasing the session after its `end` event.
    while (sent.status === 409) {
      busyRetries++;
      await new Promise((resolve) => setImmediate(resolve));
      sent = await sendMessage(server.url, sessionId, questionFor(chat, index));
    }
    if (sent.status !== 202) throw new Error(`send answered ${sent.status}: ${sent.text}`);
    const sendMs = performance.now() - started;
    const { runId, eventsUrl } = sent.body as { runId: string; eventsUrl: string };
    const reader = following.followFrom ?? server;
    const [stream, other] = await Promise.all([
      followRun(`${reader.url}${eventsUrl}`, started),
      following.alsoFollowOn === undefined
        ? null
        : followRun(`${following.alsoFollowOn.url}${eventsUrl}`, started),
    ]);
    if (stream.terminalState !== 'completed') {
      throw new Error(`run ${runId} ended ${stream.terminalState ?? 'without an end event'}`);
    }
    // Both followers must have read the same run: a difference is a lost or doubled event.
    if (other !== null && (other.terminalState !== 'completed' || other.text !== stream.text)) {
      throw new Error(
        `run ${runId}: the second follower read ${other.text.length} characters ending ${other.terminalState}, the first ${stream.text.length} ending completed`,
      );
    }
    return {
      sessionId,
      runId,
      sendMs,
      firstEventMs: stream.firstEventMs,
      streamedText: stream.text,
    };
  });
  const rssBytes = await server.residentBytes();
  const mismatches = await checkTranscripts(server, run.turns);
  for (const sessionId of sessionIds) {
    await json(server.url, `/api/sessions/${sessionId}`, 'DELETE');
  }
  return summarizeTrial(run, { rssBytes, mismatches, busyRetries });
}

async function checkTranscripts(server: ServerProcess, turns: readonly ChatTurn[]) {
  const bySession = new Map<string, ChatTurn[]>();
  for (const turn of turns) {
    bySession.set(turn.sessionId, [...(bySession.get(turn.sessionId) ?? []), turn]);
  }
  const mismatches: string[] = [];
  for (const [sessionId, sessionTurns] of bySession) {
    const response = await json(server.url, `/api/sessions/${sessionId}`, 'GET');
    const { session } = response.body as {
      session: { messages: Parameters<typeof compareAnswer>[1] };
    };
    for (const turn of sessionTurns) {
      const mismatch = compareAnswer(turn, session.messages);
      if (mismatch !== null) mismatches.push(mismatch);
    }
  }
  return mismatches;
}

function sendMessage(url: string, sessionId: string, content: string) {
  return json(url, `/api/sessions/${sessionId}/messages`, 'POST', { content });
}

async function json(url: string, path: string, method: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 500 || (response.status >= 400 && response.status !== 409)) {
    throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  }
  return { status: response.status, text, body: text.length > 0 ? JSON.parse(text) : null };
}

/**
 * Reads a run's SSE stream to its `end` event: the time to the first journal record, the
 * token texts in order, and the terminal state. The server writes each event as
 * `event:`/`data:` lines and a blank line; comments (heartbeats) start with a colon.
 */
async function followRun(
  url: string,
  sentAt: number,
): Promise<{ firstEventMs: number; text: string; terminalState: string | null }> {
  const response = await fetch(url, { headers: { accept: 'text/event-stream' } });
  if (!response.ok || response.body === null) {
    throw new Error(`events answered ${response.status}: ${await response.text()}`);
  }
  const decoder = new TextDecoder();
  let buffer = '';
  let firstEventMs = Number.NaN;
  let text = '';
  let terminalState: string | null = null;
  // Leaving the loop (after `end`) cancels the body, which closes the connection.
  reading: for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === undefined || data === undefined) continue;
      const parsed = JSON.parse(data) as { data?: { text?: string }; terminalState?: string };
      if (event === 'end') {
        terminalState = parsed.terminalState ?? null;
        break reading;
      }
      if (Number.isNaN(firstEventMs)) firstEventMs = performance.now() - sentAt;
      if (event === 'token') text += parsed.data?.text ?? '';
    }
  }
  return { firstEventMs, text, terminalState };
}
