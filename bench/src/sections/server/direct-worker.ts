/**
 * The direct contender, in a process of its own (started by direct-chats.ts with the
 * server's tsx loader, so it can import the server's TypeScript): the same scripted agent
 * and the same journal-event mapping as the server, writing to a store directly, driven
 * the way the server's RunExecutor drives a run. No HTTP, no SSE: what is left between it
 * and the server is what the server adds.
 */
import type { JournalEventInput, Message, SessionStore } from '@keepsake/core';
import { createSessionStore } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import {
  compareAnswer,
  questionFor,
  runChatLoops,
  summarizeTrial,
  type TrialFigures,
} from './chat-turns.js';

/** The parts of the server's agent module this contender uses (typed here: bench does not depend on the app). */
interface AgentModule {
  createScriptedAgent(options: { tokenDelayMs: number; answerWords: number }): {
    stream(input: {
      sessionId: string;
      messages: Array<{ role: string; content: string }>;
      signal: AbortSignal;
    }): AsyncIterable<{ type: string; text?: string }>;
  };
}
interface JournalEventsModule {
  toJournalEvent(event: unknown): JournalEventInput;
  toAgentHistory(messages: readonly Message[]): Array<{ role: string; content: string }>;
}

export type DirectWorkerRequest =
  | {
      readonly type: 'open';
      readonly directory: string;
      readonly tokenDelayMs: number;
      readonly answerWords: number;
      readonly agentModule: string;
      readonly journalEventsModule: string;
    }
  | { readonly type: 'trial'; readonly chats: number; readonly durationMs: number }
  | { readonly type: 'close' };

export type DirectWorkerReply =
  | { readonly type: 'ready' }
  | { readonly type: 'result'; readonly figures: TrialFigures }
  | { readonly type: 'failed'; readonly error: string };

let store: SessionStore | null = null;
let agent: ReturnType<AgentModule['createScriptedAgent']> | null = null;
let journalEvents: JournalEventsModule | null = null;

process.on('message', (request: DirectWorkerRequest) => {
  if (request.type === 'close') {
    // Leaving the IPC channel lets the process exit once the store is closed.
    void store?.close().finally(() => process.disconnect());
    return;
  }
  void handle(request).then(
    (reply) => process.send?.(reply),
    (error: unknown) =>
      process.send?.({
        type: 'failed',
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      } satisfies DirectWorkerReply),
  );
});

async function handle(
  request: Exclude<DirectWorkerRequest, { type: 'close' }>,
): Promise<DirectWorkerReply> {
  switch (request.type) {
    case 'open': {
      const agents = (await import(request.agentModule)) as AgentModule;
      journalEvents = (await import(request.journalEventsModule)) as JournalEventsModule;
      agent = agents.createScriptedAgent(request);
      // The server's store options (its defaults), over one namespace's directory.
      store = createSessionStore({
        adapter: fsAdapter({ directory: request.directory }),
        journal: { durability: 'group' },
        recovery: { graceMs: 30_000 },
        checkpoint: { intervalMs: 5_000 },
      });
      return { type: 'ready' };
    }
    case 'trial':
      return { type: 'result', figures: await trial(request.chats, request.durationMs) };
  }
}

async function trial(chats: number, durationMs: number): Promise<TrialFigures> {
  if (store === null || agent === null || journalEvents === null) {
    throw new Error('the direct worker was not opened');
  }
  const openStore = store;
  const scripted = agent;
  const events = journalEvents;
  const sessionIds: string[] = [];
  for (let chat = 0; chat < chats; chat++) {
    sessionIds.push((await openStore.create({ title: `chat ${chat}` }, { fsync: true })).id);
  }
  const run = await runChatLoops(chats, durationMs, async (chat, index) => {
    const sessionId = sessionIds[chat] as string;
    const content = questionFor(chat, index);
    const started = performance.now();
    // As the server's RunExecutor: refresh, begin (E1), then stream from the history.
    await openStore.load(sessionId, { refresh: true });
    const handle = await openStore.beginRun(sessionId, { userMessage: { role: 'user', content } });
    const sendMs = performance.now() - started;
    const session = await openStore.load(sessionId);
    const messages = [...events.toAgentHistory(session.messages), { role: 'user', content }];
    let firstEventMs = Number.NaN;
    let streamedText = '';
    const controller = new AbortController();
    for await (const event of scripted.stream({ sessionId, messages, signal: controller.signal })) {
      await handle.append(events.toJournalEvent(event));
      if (Number.isNaN(firstEventMs)) firstEventMs = performance.now() - started;
      if (event.type === 'token') streamedText += event.text ?? '';
    }
    await handle.complete();
    return { sessionId, runId: handle.runId, sendMs, firstEventMs, streamedText };
  });
  const rssBytes = process.memoryUsage.rss();
  const mismatches: string[] = [];
  for (const sessionId of sessionIds) {
    const session = await openStore.load(sessionId);
    for (const turn of run.turns.filter((entry) => entry.sessionId === sessionId)) {
      const mismatch = compareAnswer(turn, session.messages);
      if (mismatch !== null) mismatches.push(mismatch);
    }
    await openStore.delete(sessionId);
  }
  return summarizeTrial(run, { rssBytes, mismatches, busyRetries: 0 });
}
