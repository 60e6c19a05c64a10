/** G: a batch-extraction memory provider's handle for one session. */
export interface MemoryAgent {
  commitMemory(context: MemoryCommitContext): Promise<void>;
  /** G7: released when the agent is evicted with nothing left uncommitted. */
  close?(): Promise<void>;
}

export interface MemoryCommitContext {
  sessionId: string;
  fromGeneration: number;
  toGeneration: number;
  signal: AbortSignal;
}

export interface DrainReport {
  committed: string[];
  failed: Array<{ sessionId: string; error: unknown }>;
  abandoned: string[];
}

export interface MemoryLifecycle {
  registerAgent(sessionId: string | null | undefined, agent: MemoryAgent): void;
  unregisterAgent(sessionId: string | null | undefined): void;
  /** G2: returns the new generation (0 for an empty id). */
  markTurnCompleted(
    sessionId: string | null | undefined,
    options?: { agent?: MemoryAgent },
  ): Promise<number>;
  hasUncommittedWork(sessionId: string | null | undefined): Promise<boolean>;
  /** G2–G5: commits the oldest dirty segment; true when a commit succeeded. */
  commit(sessionId: string | null | undefined, options?: { agent?: MemoryAgent }): Promise<boolean>;
  /** G6: waits for commits in flight, then commits what is dirty, within a deadline. */
  drain(options?: {
    deadlineMs?: number;
    agents?: ReadonlyMap<string, MemoryAgent>;
  }): Promise<DrainReport>;
  /** G7: commits, waits for commits in flight, unregisters, closes the agent when clean. */
  evict(sessionId: string | null | undefined): Promise<boolean>;
}
