import {
  decodeStoredSession,
  lifecycleStateSchema,
  type SessionSummary,
  type StorageAdapter,
} from '@keepsake/core';
import { listAll } from '../migration/list-all.js';
import { sessionSummary } from '../session-summary.js';
import type { Findings } from './findings.js';

/** What the later checks need of each readable session. */
export interface SessionFacts {
  revision: number;
  summary: SessionSummary;
  pendingRunId: string | null;
}

/**
 * A2, A5, B4, B5, G9: every session document parses, its revision is a positive integer,
 * and side fields read without being reset; every retained revision belongs to a session
 * and is older than it; every lifecycle state parses and names its own session.
 */
export async function checkSessions(
  adapter: StorageAdapter,
  findings: Findings,
  onSession: () => void,
): Promise<Map<string, SessionFacts>> {
  const sessions = new Map<string, SessionFacts>();
  for await (const id of listAll(adapter, 'sessions')) {
    onSession();
    const item = `sessions/${id}`;
    const stored = await adapter.getDocument('sessions', id);
    if (stored === null) continue;
    if (!Number.isInteger(stored.revision) || stored.revision < 1) {
      findings.problem(item, `stored revision ${stored.revision} is not a positive integer`);
    }
    const decoded = decodeStoredSession(id, stored, Date.now());
    if (!decoded.ok) {
      findings.problem(
        item,
        `does not parse: ${decoded.reason} (keepsake repair moves it to quarantine, A2)`,
      );
      continue;
    }
    for (const problem of decoded.problems) {
      findings.warning(item, `${problem.field}: ${problem.message} when read (A5)`);
    }
    const session = decoded.session;
    sessions.set(id, {
      revision: stored.revision,
      pendingRunId: session.pending?.streamId ?? null,
      summary: sessionSummary(session),
    });
  }
  for (const [id, facts] of sessions) {
    const { rotatedTo } = facts.summary;
    if (rotatedTo !== null && !sessions.has(rotatedTo)) {
      findings.warning(`sessions/${id}`, `rotated to "${rotatedTo}", which is not stored (D2)`);
    }
  }
  return sessions;
}

export async function checkRetainedRevisions(
  adapter: StorageAdapter,
  sessions: ReadonlyMap<string, SessionFacts>,
  findings: Findings,
): Promise<number> {
  let count = 0;
  for await (const id of listAll(adapter, 'revisions')) {
    count++;
    const item = `revisions/${id}`;
    const dot = id.lastIndexOf('.');
    const sessionId = id.slice(0, dot);
    const revision = Number(id.slice(dot + 1));
    if (dot < 1 || !Number.isInteger(revision) || revision < 1) {
      findings.problem(item, 'the id is not <session>.<revision>');
      continue;
    }
    const session = sessions.get(sessionId);
    if (session === undefined) {
      // Left by a delete that did not finish, or by a session moved to quarantine (A2).
      findings.warning(item, `retained for session "${sessionId}", which is not stored (B8)`);
    } else if (revision >= session.revision) {
      findings.problem(
        item,
        `retained revision ${revision} is not older than the session's revision ${session.revision} (B5)`,
      );
    }
    const stored = await adapter.getDocument('revisions', id);
    if (stored === null) continue;
    const decoded = decodeStoredSession(sessionId, { ...stored, revision: 0 }, Date.now());
    if (!decoded.ok) findings.problem(item, `does not parse: ${decoded.reason}`);
  }
  return count;
}

export async function checkLifecycleStates(
  adapter: StorageAdapter,
  sessions: ReadonlyMap<string, SessionFacts>,
  findings: Findings,
): Promise<number> {
  let count = 0;
  for await (const id of listAll(adapter, 'lifecycle')) {
    count++;
    const item = `lifecycle/${id}`;
    const stored = await adapter.getDocument('lifecycle', id);
    if (stored === null) continue;
    let value: unknown;
    try {
      value = JSON.parse(stored.base);
    } catch {
      value = undefined;
    }
    const parsed = lifecycleStateSchema.safeParse(value);
    if (!parsed.success || parsed.data.sessionId !== id) {
      findings.problem(item, 'does not parse as lifecycle state of this session (G9)');
      continue;
    }
    if (parsed.data.committedGeneration > parsed.data.generation) {
      findings.problem(item, 'its committed generation is ahead of its generation (G2, G3)');
    }
    if (!sessions.has(id)) {
      findings.warning(item, `lifecycle state of session "${id}", which is not stored`);
    }
  }
  return count;
}

/** The collections whose documents core and the checkpoint saver write as JSON text. */
const JSON_COLLECTIONS = ['runs', 'checkpoints', 'checkpoint-writes'] as const;

/**
 * A2: every run record, checkpoint and checkpoint write reads back as one JSON text with a
 * positive revision (their contents belong to core's runs and to @keepsake/langgraph, which
 * check them on read). Returns how many each collection holds.
 */
export async function checkJsonDocuments(
  adapter: StorageAdapter,
  findings: Findings,
): Promise<Record<(typeof JSON_COLLECTIONS)[number], number>> {
  const counts = { runs: 0, checkpoints: 0, 'checkpoint-writes': 0 };
  for (const collection of JSON_COLLECTIONS) {
    for await (const id of listAll(adapter, collection)) {
      counts[collection]++;
      const item = `${collection}/${id}`;
      const stored = await adapter.getDocument(collection, id);
      if (stored === null) continue;
      if (!Number.isInteger(stored.revision) || stored.revision < 1) {
        findings.problem(item, `stored revision ${stored.revision} is not a positive integer`);
      }
      try {
        JSON.parse(stored.base);
        if (stored.deltas.length > 0) findings.problem(item, 'holds deltas, which nothing writes');
      } catch {
        findings.problem(
          item,
          'does not parse as JSON (keepsake repair moves it to quarantine, A2)',
        );
      }
    }
  }
  return counts;
}
