import {
  type FollowRunItem,
  type JournalEventType,
  type Marker,
  NotFoundError,
  type RunEnding,
  type RunStanding,
  runStandingOf,
  type SessionStore,
} from '@keepsake/core';
import type { FastifyInstance } from 'fastify';
import { namespaceOf } from '../auth/authenticate.js';
import { requireEventStream } from '../http/event-stream-accept.js';
import { parseInput } from '../http/parse-input.js';
import {
  cancelBody,
  eventsQuery,
  idempotencyHeaders,
  lastEventIdHeader,
  messageBody,
  runIdParams,
  runParams,
  sessionParams,
} from '../http/request-schemas.js';
import type { Namespace } from '../namespaces/namespace-registry.js';
import { retryOnConflict } from '../runs/conflict-retry.js';
import {
  findPreviousSend,
  IdempotencyKeyReusedError,
  type PreviousSend,
  type SendIdentity,
  sendIdentity,
} from '../runs/idempotent-send.js';
import { textOf } from '../runs/journal-events.js';
import type { StreamRegistry } from '../runs/stream-registry.js';
import { removeLastTurn } from '../transcript/turn-edits.js';

export interface RunRouteDependencies {
  maxMessageChars: number;
  streams: StreamRegistry;
  /** Refuses new runs once shutdown began (503). */
  assertAcceptingRuns: () => void;
  onConflictRetry: (operation: string) => void;
  /** This instance's id, in run lookups: which instance answered, and whether it streams the run. */
  instanceId: string;
}

/** Runs: send a message, follow its events (SSE), cancel, undo, retry. */
export function registerRunRoutes(scope: FastifyInstance, dependencies: RunRouteDependencies) {
  const messageSchema = messageBody(dependencies.maxMessageChars);

  const servedBy = (namespace: Namespace, runId: string) => ({
    instance: dependencies.instanceId,
    streamedHere: namespace.runs.isLocal(runId),
  });

  const runReply = (sessionId: string, runId: string) => ({
    sessionId,
    runId,
    eventsUrl: `/api/sessions/${sessionId}/runs/${runId}/events`,
  });

  const startRun = async (
    namespace: Namespace,
    sessionId: string,
    content: string,
    identity: SendIdentity | null = null,
  ) => {
    dependencies.assertAcceptingRuns();
    const handle = await namespace.runs.start(sessionId, content, identity);
    namespace.lastActiveSessionId = sessionId;
    return runReply(sessionId, handle.runId);
  };

  /** A retried send answers what the first one started (200), never a second turn. */
  const replay = (previous: PreviousSend, identity: SendIdentity, sessionId: string) => {
    if (previous.kind === 'different') throw new IdempotencyKeyReusedError(identity);
    return runReply(sessionId, previous.runId);
  };

  scope.post('/sessions/:sessionId/messages', async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    const { content, id } = parseInput(messageSchema, request.body, 'body');
    const { 'idempotency-key': key } = parseInput(idempotencyHeaders, request.headers, 'header');
    const identity = sendIdentity(sessionId, key, id);
    if (identity === null) {
      return reply.code(202).send(await startRun(namespace, sessionId, content));
    }
    const before = await findPreviousSend(namespace.store, sessionId, identity, content);
    if (before !== null) {
      return reply
        .code(200)
        .header('idempotent-replayed', 'true')
        .send(replay(before, identity, sessionId));
    }
    try {
      return reply.code(202).send(await startRun(namespace, sessionId, content, identity));
    } catch (error) {
      // The same send racing itself (two instances, a retry while the first is in flight):
      // core let one begin and refused the other as busy or as a message id it has.
      const raced = await findPreviousSend(namespace.store, sessionId, identity, content);
      if (raced === null) throw error;
      return reply
        .code(200)
        .header('idempotent-replayed', 'true')
        .send(replay(raced, identity, sessionId));
    }
  });

  scope.get('/sessions/:sessionId/runs/:runId', async (request) => {
    const namespace = namespaceOf(request);
    const { sessionId, runId } = parseInput(runParams, request.params, 'path');
    const known = await assertRunKnown(namespace, sessionId, runId);
    let run = await namespace.store.runSummary(sessionId, runId);
    // The journal says how the run went; the session says how its turn stands. A run that
    // died before its first record has only the latter (`exists: false`, then a marker).
    const standing = known ?? (await loadRunStanding(namespace.store, sessionId, runId));
    if (run.terminalState === null && standing.kind === 'ended') {
      // E5: answered, but its process died before the journal's ending: seal it now.
      await namespace.store.closeAnsweredRun(sessionId, runId);
      run = await namespace.store.runSummary(sessionId, runId);
    }
    return { run, turn: describeTurn(standing), ...servedBy(namespace, runId) };
  });

  // E8: a client (or another service) that kept only the run id finds where it lives.
  scope.get('/runs/:runId', async (request) => {
    const namespace = namespaceOf(request);
    const { runId } = parseInput(runIdParams, request.params, 'path');
    let run = await namespace.store.findRun(runId);
    if (run === null) throw new NotFoundError(runId, 'run');
    // E5: a turn answered whose journal never got its ending (its process died in between)
    // ends its run here too; closeAnsweredRun changes nothing while the turn is not answered.
    if (run.terminalState === null && run.exists) {
      const closed = await namespace.store.closeAnsweredRun(run.sessionId, runId);
      if (closed !== null) run = (await namespace.store.findRun(runId)) ?? run;
    }
    return {
      run,
      runUrl: `/api/sessions/${run.sessionId}/runs/${runId}`,
      eventsUrl: `/api/sessions/${run.sessionId}/runs/${runId}/events`,
      ...servedBy(namespace, runId),
    };
  });

  const sseRoute = { sse: 'only' as const, preHandler: requireEventStream };
  scope.get('/sessions/:sessionId/runs/:runId/events', sseRoute, async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId, runId } = parseInput(runParams, request.params, 'path');
    const query = parseInput(eventsQuery, request.query, 'query');
    const header = reply.sse.lastEventId;
    const afterSequence =
      header !== null && header !== ''
        ? Number(parseInput(lastEventIdHeader, header, 'header'))
        : (query.after ?? 0);
    await assertRunKnown(namespace, sessionId, runId);

    const stream = dependencies.streams.open(() => !namespace.runs.isLocal(runId));
    reply.sse.onClose(() => stream.close());
    // Commit the response now: a client sees the stream is open even while the run has
    // nothing to send yet (a restart, a model slow to its first token).
    reply.sse.sendHeaders();
    reply.raw.write(`: run ${runId}\n\n`);
    try {
      // E9: core follows the run to its one ending, whichever instance streams it.
      await reply.sse.send(
        toSseMessages(
          namespace.store.followRun(sessionId, runId, {
            after: afterSequence,
            signal: stream.signal,
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
 * Every run id the server handed out resolves until its session is deleted: a run is known
 * when it has a journal, is streamed here, or its session names it (its pending turn, its
 * marker, its messages or tool calls). A run that died before its first record has no
 * journal, only that. The journal is read again after the local check: a local run that
 * just ended has appended its terminal record by the time it is unlisted. Returns the
 * session's standing when it had to be read.
 */
async function assertRunKnown(
  namespace: Namespace,
  sessionId: string,
  runId: string,
): Promise<RunStanding | null> {
  const { store } = namespace;
  if (namespace.runs.isLocal(runId) || (await store.runSummary(sessionId, runId)).exists) {
    return null;
  }
  const standing = await loadRunStanding(store, sessionId, runId);
  if (standing.kind === 'unknown') throw new NotFoundError(runId, 'run');
  return standing;
}

/** Loads the session afresh (which repairs a dead run's turn, F1) and reads its standing. */
async function loadRunStanding(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<RunStanding> {
  // refresh: another process may have recovered or continued the run since it was cached.
  return runStandingOf(await store.load(sessionId, { refresh: true }), runId);
}

/** How the session's turn stands for a run, for `GET …/runs/:runId`. */
function describeTurn(standing: RunStanding): {
  pending: boolean;
  marker: Pick<Marker, 'type' | 'wording'> | null;
} {
  return {
    pending: standing.kind === 'pending',
    marker:
      standing.kind === 'marker'
        ? { type: standing.message.marker.type, wording: standing.message.marker.wording }
        : null,
  };
}

/** The event a marker stands for, named like the journal record that would have ended the run. */
const eventTypeOfMarker: Record<Marker['type'], JournalEventType> = {
  interrupted: 'interrupted',
  cancelled: 'cancel',
  errored: 'error',
  'tool-limit': 'tool_limit',
};

type SseMessage = { id?: string; event: string; data: unknown };

async function* toSseMessages(items: AsyncIterable<FollowRunItem>): AsyncGenerator<SseMessage> {
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
    } else if (item.kind === 'skipped') {
      // No id: a resume position is a record's sequence, and a reconnect that reads past
      // the same damage reports it again.
      // Shaped like a record (as a no-journal marker is), so clients render it as one.
      yield {
        event: 'warning',
        data: {
          sequence: null,
          type: 'warning',
          eventId: null,
          at: Date.now(),
          data: {
            reason: 'journal-records-skipped',
            message: describeSkipped(item),
            invalidRecords: item.invalidRecords,
            gaps: item.gaps,
            lastSequence: item.lastSequence,
          },
        },
      };
    } else {
      yield* endingMessages(item.ending);
    }
  }
}

/**
 * The stream's last messages. A run that ended without a journal record of its ending (it
 * died before its first record; its session's marker says how it ended) gets an event
 * shaped like that record first, with no id: a resume position is a sequence.
 */
function* endingMessages(ending: RunEnding): Generator<SseMessage> {
  const marker = ending.markerMessage;
  if (ending.reason === 'session' && marker !== null) {
    const type = eventTypeOfMarker[marker.marker.type];
    yield {
      event: type,
      data: {
        sequence: null,
        type,
        eventId: null,
        at: marker.createdAt,
        data: {
          reason: 'no-journal',
          wording: marker.marker.wording,
          message: typeof marker.content === 'string' ? marker.content : '',
        },
      },
    };
  }
  yield {
    event: 'end',
    data: {
      reason: END_REASON[ending.reason],
      terminalState: ending.state,
      marker: marker === null ? null : { type: marker.marker.type, wording: marker.marker.wording },
    },
  };
}

/** The stream's end reasons, as clients have known them. */
const END_REASON: Record<RunEnding['reason'], string> = {
  journal: 'terminal',
  session: 'no-journal',
  deleted: 'session-deleted',
  unknown: 'no-journal',
};

/** E2, E3: what a reader of the stream is told about records it will not get. */
function describeSkipped(item: Extract<FollowRunItem, { kind: 'skipped' }>): string {
  const parts = [
    ...item.invalidRecords.map((entry) => `record ${entry.sequence} skipped: ${entry.reason}`),
    ...item.gaps.map((gap) =>
      gap.found - gap.expected === 1
        ? `record ${gap.expected} is missing`
        : `records ${gap.expected}–${gap.found - 1} are missing`,
    ),
  ];
  return `Part of this answer's journal could not be read (${parts.join('; ')}).`;
}
