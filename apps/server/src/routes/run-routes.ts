import { NotFoundError } from '@keepsake/core';
import type { FastifyInstance } from 'fastify';
import { namespaceOf } from '../auth/authenticate.js';
import { parseInput } from '../http/parse-input.js';
import {
  cancelBody,
  eventsQuery,
  lastEventIdHeader,
  messageBody,
  runParams,
  sessionParams,
} from '../http/request-schemas.js';
import type { Namespace } from '../namespaces/namespace-registry.js';
import { retryOnConflict } from '../runs/conflict-retry.js';
import { textOf } from '../runs/journal-events.js';
import { type TailItem, tailJournal } from '../runs/journal-tail.js';
import type { StreamRegistry } from '../runs/stream-registry.js';
import { removeLastTurn } from '../transcript/turn-edits.js';

export interface RunRouteDependencies {
  maxMessageChars: number;
  pollIntervalMs: number;
  recoveryProbeMs: number;
  streams: StreamRegistry;
  /** Refuses new runs once shutdown began (503). */
  assertAcceptingRuns: () => void;
  onConflictRetry: (operation: string) => void;
}

/** Runs: send a message, follow its events (SSE), cancel, undo, retry. */
export function registerRunRoutes(scope: FastifyInstance, dependencies: RunRouteDependencies) {
  const messageSchema = messageBody(dependencies.maxMessageChars);

  const startRun = async (namespace: Namespace, sessionId: string, content: string) => {
    dependencies.assertAcceptingRuns();
    const handle = await namespace.runs.start(sessionId, content);
    namespace.lastActiveSessionId = sessionId;
    return {
      sessionId,
      runId: handle.runId,
      eventsUrl: `/api/sessions/${sessionId}/runs/${handle.runId}/events`,
    };
  };

  scope.post('/sessions/:sessionId/messages', async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    const { content } = parseInput(messageSchema, request.body, 'body');
    return reply.code(202).send(await startRun(namespace, sessionId, content));
  });

  scope.get('/sessions/:sessionId/runs/:runId', async (request) => {
    const { store } = namespaceOf(request);
    const { sessionId, runId } = parseInput(runParams, request.params, 'path');
    await assertRunKnown(namespaceOf(request), sessionId, runId);
    return { run: await store.runSummary(sessionId, runId) };
  });

  scope.get('/sessions/:sessionId/runs/:runId/events', { sse: 'only' }, async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId, runId } = parseInput(runParams, request.params, 'path');
    const query = parseInput(eventsQuery, request.query, 'query');
    const header = reply.sse.lastEventId;
    const afterSequence =
      header !== null && header !== ''
        ? Number(parseInput(lastEventIdHeader, header, 'header'))
        : (query.after ?? 0);
    await assertRunKnown(namespace, sessionId, runId);

    const stream = dependencies.streams.open();
    reply.sse.onClose(() => stream.close());
    try {
      await reply.sse.send(
        toSseMessages(
          tailJournal({
            store: namespace.store,
            waker: namespace.waker,
            sessionId,
            runId,
            afterSequence,
            signal: stream.signal,
            pollIntervalMs: dependencies.pollIntervalMs,
            recoveryProbeMs: dependencies.recoveryProbeMs,
            isLocal: () => namespace.runs.isLocal(runId),
          }),
        ),
      );
    } finally {
      stream.close();
    }
  });

  scope.post('/sessions/:sessionId/cancel', async (request) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    const { runId } = parseInput(cancelBody, request.body, 'body');
    const outcome = await namespace.store.cancelRun(sessionId, runId);
    if (outcome.cancelled) namespace.runs.stopLocal(outcome.runId);
    return outcome;
  });

  scope.post('/sessions/:sessionId/undo', async (request) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    const edit = await retryOnConflict(() => removeLastTurn(namespace.store, sessionId), {
      onRetry: () => dependencies.onConflictRetry('undo'),
    });
    return { session: edit.session, removedMessageId: edit.removedUserMessage.id };
  });

  scope.post('/sessions/:sessionId/retry', async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    dependencies.assertAcceptingRuns();
    const edit = await retryOnConflict(() => removeLastTurn(namespace.store, sessionId), {
      onRetry: () => dependencies.onConflictRetry('retry'),
    });
    const content = textOf(edit.removedUserMessage);
    return reply.code(202).send(await startRun(namespace, sessionId, content));
  });
}

/**
 * A run is known when it has a journal, is streamed here, or is its session's pending turn
 * (a run that has not appended yet). The journal is read again after the local check: a
 * local run that just ended has appended its terminal record by the time it is unlisted.
 */
async function assertRunKnown(namespace: Namespace, sessionId: string, runId: string) {
  const { store } = namespace;
  if ((await store.runSummary(sessionId, runId)).exists || namespace.runs.isLocal(runId)) return;
  if ((await store.runSummary(sessionId, runId)).exists) return;
  const session = await store.load(sessionId, { refresh: true });
  if (session.pending?.streamId !== runId) throw new NotFoundError(runId, 'run');
}

type SseMessage = { id?: string; event: string; data: unknown };

async function* toSseMessages(items: AsyncIterable<TailItem>): AsyncGenerator<SseMessage> {
  for await (const item of items) {
    if (item.kind === 'record') {
      const { record } = item;
      // The id is the journal sequence: a reconnect with Last-Event-ID resumes right after it.
      yield {
        id: String(record.sequence),
        event: record.type,
        data: {
          sequence: record.sequence,
          type: record.type,
          eventId: record.eventId,
          at: record.at,
          data: record.data,
        },
      };
    } else {
      yield { event: 'end', data: { reason: item.reason, terminalState: item.terminalState } };
    }
  }
}
