import type { JournalWriter } from './journal-writer.js';

/**
 * How many writers are kept once idle. An idle writer holds no lock and no file, only what
 * it knows of the journal's tail (re-read when needed).
 */
const IDLE_WRITERS_KEPT = 1024;

/**
 * This process's journal writers, by session id then run id. Two lookups on the caller's own
 * id strings (whose hashes V8 keeps) instead of a key string made and hashed per streamed
 * event. Writers are only ever added for valid ids (A1), so finding one also says its ids
 * are valid.
 */
export class JournalWriters {
  private readonly bySession = new Map<string, Map<string, JournalWriter>>();
  private count = 0;

  get(sessionId: string, runId: string): JournalWriter | undefined {
    return this.bySession.get(sessionId)?.get(runId);
  }

  /** Adds `writer`; past the cap, idle writers go, oldest session first. */
  add(sessionId: string, runId: string, writer: JournalWriter): void {
    let runs = this.bySession.get(sessionId);
    if (runs === undefined) {
      runs = new Map();
      this.bySession.set(sessionId, runs);
    }
    if (!runs.has(runId)) this.count++;
    runs.set(runId, writer);
    if (this.count > IDLE_WRITERS_KEPT) this.dropIdle(writer);
  }

  all(): JournalWriter[] {
    return [...this.bySession.values()].flatMap((runs) => [...runs.values()]);
  }

  private dropIdle(keep: JournalWriter): void {
    for (const [sessionId, runs] of this.bySession) {
      for (const [runId, candidate] of runs) {
        if (this.count <= IDLE_WRITERS_KEPT) return;
        if (candidate === keep || !candidate.isIdle) continue;
        runs.delete(runId);
        this.count--;
      }
      if (runs.size === 0) this.bySession.delete(sessionId);
    }
  }
}
