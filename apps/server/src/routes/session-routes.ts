import { InvalidInputError, NotFoundError } from '@keepsake/core';
import type { FastifyInstance } from 'fastify';
import { namespaceOf } from '../auth/authenticate.js';
import { parseInput } from '../http/parse-input.js';
import {
  createSessionBody,
  listQuery,
  sessionParams,
  updateSessionBody,
} from '../http/request-schemas.js';
import type { MemoryBoundary } from '../memory/memory-boundary.js';
import { retryOnConflict } from '../runs/conflict-retry.js';

export interface SessionRouteDependencies {
  memoryBoundary: MemoryBoundary;
  onConflictRetry: (operation: string) => void;
}

/** Sessions: create, list (cursor), get, rename (title), delete. */
export function registerSessionRoutes(
  scope: FastifyInstance,
  dependencies: SessionRouteDependencies,
): void {
  scope.get('/sessions', async (request) => {
    const { store } = namespaceOf(request);
    const query = parseInput(listQuery, request.query, 'query');
    try {
      return await store.list({
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        ...(query.limit !== undefined ? { limit: query.limit } : {}),
      });
    } catch (error) {
      // The adapter's own words name its internals; a client needs to know what to send.
      if (query.cursor !== undefined && InvalidInputError.isInstance(error)) {
        throw new InvalidInputError(
          'Invalid request query: cursor: not one this server returned; pass the nextCursor of a previous page, or no cursor for the first page',
          { path: 'cursor', cause: error },
        );
      }
      throw error;
    }
  });

  scope.post('/sessions', async (request, reply) => {
    const namespace = namespaceOf(request);
    const body = parseInput(createSessionBody, request.body, 'body');
    const session = await namespace.store.create(
      { title: body.title ?? 'New chat' },
      { fsync: true },
    );
    // G: a new session is the boundary at which the previous one's memory is committed.
    const previous = body.previousSessionId ?? namespace.lastActiveSessionId;
    namespace.lastActiveSessionId = session.id;
    if (previous !== null && previous !== session.id) {
      dependencies.memoryBoundary.commitInBackground(namespace, previous);
    }
    return reply.code(201).send({ session });
  });

  scope.get('/sessions/:sessionId', async (request) => {
    const { store } = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    // refresh: another server on the same backend may have written it since this one cached it.
    const session = await store.load(sessionId, { refresh: true });
    return { session, activeRunId: session.pending?.streamId ?? null };
  });

  scope.patch('/sessions/:sessionId', async (request) => {
    const { store } = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    const body = parseInput(updateSessionBody, request.body, 'body');
    const session = await retryOnConflict(
      // Edit the live session only under its lock: a checkpoint or a run completing in
      // this process must never write (or record as written) a half-made edit.
      () =>
        store.withLock(sessionId, async () => {
          const current = await store.load(sessionId, { refresh: true });
          const previousTitle = current.title;
          current.title = body.title;
          try {
            return structuredClone(await store.save(current, { fsync: true }));
          } catch (error) {
            // Undo the edit so the refresh before the retry is not blocked by unsaved changes.
            current.title = previousTitle;
            throw error;
          }
        }),
      { onRetry: () => dependencies.onConflictRetry('rename') },
    );
    return { session };
  });

  scope.delete('/sessions/:sessionId', async (request, reply) => {
    const namespace = namespaceOf(request);
    const { sessionId } = parseInput(sessionParams, request.params, 'path');
    if (!(await namespace.store.exists(sessionId))) throw new NotFoundError(sessionId);
    // Seal a live run's journal first, so its streamer (here or in another process) stops
    // instead of writing a journal for a session that no longer exists.
    const cancelled = await namespace.store.cancelRun(sessionId);
    if (cancelled.cancelled) namespace.runs.stopLocal(cancelled.runId);
    const deleted = await namespace.store.delete(sessionId);
    if (!deleted) throw new NotFoundError(sessionId);
    dependencies.memoryBoundary.forget(namespace, sessionId);
    if (namespace.lastActiveSessionId === sessionId) namespace.lastActiveSessionId = null;
    return reply.code(204).send();
  });
}
