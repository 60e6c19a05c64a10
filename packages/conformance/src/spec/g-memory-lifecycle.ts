/**
 * G1–G9: the memory lifecycle of batch-extraction providers (ported from seed 003),
 * with commits run outside every lock and generations that survive a crash.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import type { MemoryAgent, MemoryCommitContext, MemoryLifecycle } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { type Deferred, deferred, drainCallbacks, settlesPromptly } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

/**
 * A memory provider that records its commits. A commit can be held open (`hold()`) to
 * model a slow extraction, and made to fail a number of times.
 */
class RecordingAgent implements MemoryAgent {
  readonly commits: MemoryCommitContext[] = [];
  failuresRemaining = 0;
  closeCalls = 0;
  entered: Deferred = deferred();
  private gate: Deferred | null = null;

  get calls(): number {
    return this.commits.length;
  }

  /** The next commits wait until `release()` is called. */
  hold(): void {
    this.gate = deferred();
    this.entered = deferred();
  }

  release(): void {
    this.gate?.resolve();
    this.gate = null;
  }

  commitMemory = async (context: MemoryCommitContext): Promise<void> => {
    this.commits.push(context);
    this.entered.resolve();
    if (this.gate !== null) await this.gate.promise;
    if (this.failuresRemaining > 0) {
      this.failuresRemaining--;
      throw new Error('commit failed');
    }
  };

  close = async (): Promise<void> => {
    this.closeCalls++;
  };
}

/** A store, its lifecycle and one created session. */
async function lifecycleOf(env: TestEnvironment) {
  const opened = await env.openStore({ lifecycle: { drainDeadlineMs: 5_000 } });
  const sessionId = env.id();
  await opened.store.create({ id: sessionId });
  return { ...opened, lifecycle: opened.store.lifecycle, sessionId };
}

/** `lifecycleOf`, with a recording agent (failing its first `failures` commits) registered. */
async function registeredAgentOf(env: TestEnvironment, options: { failures?: number } = {}) {
  const opened = await lifecycleOf(env);
  const agent = new RecordingAgent();
  agent.failuresRemaining = options.failures ?? 0;
  opened.lifecycle.registerAgent(opened.sessionId, agent);
  return { ...opened, agent };
}

/**
 * Marks a turn, starts a commit that `agent` holds open (`agent.release()` ends it) and,
 * while it is in flight, marks a newer turn. The commit is returned wrapped, still pending.
 */
async function commitInFlightWithNewerTurn(
  lifecycle: MemoryLifecycle,
  sessionId: string,
  agent: RecordingAgent,
): Promise<{ committing: Promise<boolean> }> {
  await lifecycle.markTurnCompleted(sessionId, { agent });
  agent.hold();
  const committing = lifecycle.commit(sessionId);
  await agent.entered.promise;
  await lifecycle.markTurnCompleted(sessionId, { agent });
  return { committing };
}

/**
 * G5's starting point: an old agent owns a completed turn whose commit failed once
 * (`firstCommit`, for the test to assert), then a new agent is registered in its place.
 */
async function replacedAfterFailedCommit(env: TestEnvironment) {
  const { lifecycle, sessionId } = await lifecycleOf(env);
  const oldAgent = new RecordingAgent();
  oldAgent.failuresRemaining = 1;
  const newAgent = new RecordingAgent();
  lifecycle.registerAgent(sessionId, oldAgent);
  await lifecycle.markTurnCompleted(sessionId, { agent: oldAgent });
  const firstCommit = await lifecycle.commit(sessionId);
  lifecycle.registerAgent(sessionId, newAgent);
  return { lifecycle, sessionId, oldAgent, newAgent, firstCommit };
}

export function defineMemoryLifecycle(suite: SpecRegistrar): void {
  suite.test('G1', 'a registered agent with no completed turn is not committed', async (env) => {
    const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
    expect(await lifecycle.commit(sessionId)).toBe(false);
    expect(agent.calls).toBe(0);
    expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
  });

  suite.test(
    'G1',
    'a completed run marks its turn without committing it; a cancelled or failed run marks nothing',
    async (env) => {
      const { store, lifecycle, sessionId, agent } = await registeredAgentOf(env);
      const cancelled = await store.beginRun(sessionId, {
        userMessage: { role: 'user', content: 'a' },
      });
      await cancelled.cancel();
      const failed = await store.beginRun(sessionId, {
        userMessage: { role: 'user', content: 'b' },
      });
      await failed.fail({ message: 'boom' });
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      const completed = await store.beginRun(sessionId, {
        userMessage: { role: 'user', content: 'c' },
      });
      await completed.complete({ assistantMessages: [{ role: 'assistant', content: 'd' }] });
      // Extraction happens at session boundaries, never per turn.
      expect(agent.calls).toBe(0);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect(agent.commits).toEqual([
        expect.objectContaining({ fromGeneration: 1, toGeneration: 1 }),
      ]);
    },
  );

  suite.test(
    'G2',
    'completed turns coalesce into one commit; a further commit with nothing new is a no-op',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
      const generations: number[] = [];
      for (let turn = 0; turn < 3; turn++) {
        generations.push(await lifecycle.markTurnCompleted(sessionId, { agent }));
        expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      }
      expect(generations).toEqual([1, 2, 3]);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect(agent.calls).toBe(1);
      expect(agent.commits[0]).toMatchObject({ sessionId, fromGeneration: 1, toGeneration: 3 });
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      expect(await lifecycle.commit(sessionId)).toBe(false);
      expect(agent.calls).toBe(1);
    },
  );

  suite.test(
    'G3',
    'a commit that finishes late clears only what it captured; a turn completed meanwhile stays uncommitted',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
      const { committing } = await commitInFlightWithNewerTurn(lifecycle, sessionId, agent);
      agent.release();
      expect(await committing).toBe(true);
      expect(agent.calls).toBe(1);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect(agent.calls).toBe(2);
      expect(agent.commits[1]).toMatchObject({ fromGeneration: 2, toGeneration: 2 });
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test(
    'G4',
    'a failed commit keeps the work uncommitted and the agent that owns it',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env, { failures: 1 });
      await lifecycle.markTurnCompleted(sessionId, { agent });
      expect(await lifecycle.commit(sessionId)).toBe(false);
      expect(agent.calls).toBe(1);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect(agent.calls).toBe(2);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test(
    'G4',
    'after a failed commit with an explicit agent, a retry without an agent still finds it',
    async (env) => {
      const { lifecycle, sessionId } = await lifecycleOf(env);
      const agent = new RecordingAgent();
      agent.failuresRemaining = 1;
      await lifecycle.markTurnCompleted(sessionId);
      expect(await lifecycle.commit(sessionId, { agent })).toBe(false);
      expect(agent.calls).toBe(1);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect(agent.calls).toBe(2);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test(
    'G5',
    'a replacement agent owns future turns only: the failed segment is committed by its own owner',
    async (env) => {
      const { lifecycle, sessionId, oldAgent, newAgent, firstCommit } =
        await replacedAfterFailedCommit(env);
      expect(firstCommit).toBe(false);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect([oldAgent.calls, newAgent.calls]).toEqual([2, 0]);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      await lifecycle.markTurnCompleted(sessionId);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect([oldAgent.calls, newAgent.calls]).toEqual([2, 1]);
    },
  );

  suite.test(
    'G5',
    'an explicit commit with the new agent cannot clear the old dirty segment',
    async (env) => {
      const { lifecycle, sessionId, oldAgent, newAgent, firstCommit } =
        await replacedAfterFailedCommit(env);
      expect(firstCommit).toBe(false);
      await lifecycle.markTurnCompleted(sessionId, { agent: newAgent });
      expect(await lifecycle.commit(sessionId, { agent: newAgent })).toBe(true);
      expect([oldAgent.calls, newAgent.calls]).toEqual([2, 0]);
      expect(oldAgent.commits[1]).toMatchObject({ fromGeneration: 1, toGeneration: 1 });
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      expect(await lifecycle.commit(sessionId)).toBe(true);
      expect([oldAgent.calls, newAgent.calls]).toEqual([2, 1]);
      expect(newAgent.commits[0]).toMatchObject({ fromGeneration: 2, toGeneration: 2 });
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test(
    'G6',
    'drain waits for a commit in flight, then commits the newer generations',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
      const { committing } = await commitInFlightWithNewerTurn(lifecycle, sessionId, agent);
      const draining = lifecycle.drain();
      expect(await settlesPromptly(draining), 'drain waits for the commit in flight').toBe(false);
      expect(agent.calls).toBe(1);
      agent.release();
      await committing;
      const report = await draining;
      expect(agent.calls).toBe(2);
      expect(report.committed).toContain(sessionId);
      expect(report.failed).toEqual([]);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test(
    'G6',
    'drain includes dirty sessions whose registration was cleared when the caller supplies the agent',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
      await lifecycle.markTurnCompleted(sessionId, { agent });
      lifecycle.unregisterAgent(sessionId);
      const report = await lifecycle.drain({ agents: new Map([[sessionId, agent]]) });
      expect(agent.calls).toBe(1);
      expect(report.committed).toContain(sessionId);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      // And an explicit commit finds such work too.
      await lifecycle.markTurnCompleted(sessionId, { agent });
      lifecycle.unregisterAgent(sessionId);
      expect(await lifecycle.commit(sessionId, { agent })).toBe(true);
      expect(agent.calls).toBe(2);
    },
  );

  suite.test(
    'G7',
    'evicting an agent commits before dropping it and closes it; its handle is gone afterwards',
    async (env) => {
      const { lifecycle, sessionId, store } = await lifecycleOf(env);
      const agent = new RecordingAgent();
      let lockedInside: unknown = null;
      const commit = agent.commitMemory;
      agent.commitMemory = async (context) => {
        // Outside any lock: the provider may use the session itself.
        lockedInside = await store
          .withLock(sessionId, async () => 'ok')
          .catch((error: unknown) => error);
        await commit(context);
      };
      lifecycle.registerAgent(sessionId, agent);
      await lifecycle.markTurnCompleted(sessionId, { agent });
      expect(await lifecycle.evict(sessionId)).toBe(true);
      expect(agent.calls).toBe(1);
      expect(lockedInside).toBe('ok');
      expect(agent.closeCalls).toBe(1);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      await lifecycle.markTurnCompleted(sessionId);
      expect(await lifecycle.commit(sessionId)).toBe(false);
      expect(agent.calls).toBe(1);
    },
  );

  suite.test(
    'G7',
    'evicting waits for a commit in flight and commits the newer generation before closing the agent',
    async (env) => {
      const { lifecycle, sessionId, agent } = await registeredAgentOf(env);
      const { committing } = await commitInFlightWithNewerTurn(lifecycle, sessionId, agent);
      const evicting = lifecycle.evict(sessionId);
      expect(await settlesPromptly(evicting), 'evict waits for the commit in flight').toBe(false);
      expect(agent.closeCalls).toBe(0);
      agent.release();
      await committing;
      expect(await evicting).toBe(true);
      expect(agent.calls).toBe(2);
      expect(agent.closeCalls).toBe(1);
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(false);
    },
  );

  suite.test('G7', 'an agent left with uncommitted work is not closed', async (env) => {
    const { lifecycle, sessionId, agent } = await registeredAgentOf(env, { failures: 5 });
    await lifecycle.markTurnCompleted(sessionId, { agent });
    expect(await lifecycle.evict(sessionId)).toBe(false);
    expect(agent.closeCalls).toBe(0);
    expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
  });

  suite.test(
    'G8',
    'empty or missing session ids make every lifecycle call a safe no-op',
    async (env) => {
      const { lifecycle, adapter } = await lifecycleOf(env);
      const agent = new RecordingAgent();
      adapter.clearCalls();
      for (const empty of ['', null, undefined]) {
        expect(lifecycle.registerAgent(empty, agent)).toBeUndefined();
        expect(lifecycle.unregisterAgent(empty)).toBeUndefined();
        expect(await lifecycle.markTurnCompleted(empty)).toBe(0);
        expect(await lifecycle.markTurnCompleted(empty, { agent })).toBe(0);
        expect(await lifecycle.hasUncommittedWork(empty)).toBe(false);
        expect(await lifecycle.commit(empty)).toBe(false);
        expect(await lifecycle.commit(empty, { agent })).toBe(false);
        expect(await lifecycle.evict(empty)).toBe(false);
      }
      expect(agent.calls).toBe(0);
      expect(adapter.calls).toEqual([]);
    },
  );

  suite.test(
    'G9:restart',
    'generations survive a crash between a completed turn and its commit',
    async (env) => {
      const opened = await env.openStore();
      const sessionId = env.id();
      await opened.store.create({ id: sessionId }, { fsync: true });
      const agent = new RecordingAgent();
      await opened.store.lifecycle.markTurnCompleted(sessionId);
      expect(await opened.store.lifecycle.commit(sessionId, { agent })).toBe(true);
      await opened.store.lifecycle.markTurnCompleted(sessionId);
      await opened.store.lifecycle.markTurnCompleted(sessionId);
      const afterCrash = await env.restartAfterCrash(opened);
      const lifecycle = afterCrash.store.lifecycle;
      expect(await lifecycle.hasUncommittedWork(sessionId)).toBe(true);
      const successor = new RecordingAgent();
      expect(await lifecycle.commit(sessionId, { agent: successor })).toBe(true);
      expect(successor.commits).toEqual([
        expect.objectContaining({ sessionId, fromGeneration: 2, toGeneration: 3 }),
      ]);
      const again = await env.restartAfterCrash(afterCrash);
      expect(await again.store.lifecycle.hasUncommittedWork(sessionId)).toBe(false);
      expect(await again.store.lifecycle.markTurnCompleted(sessionId)).toBe(4);
    },
  );

  suite.test(
    'G9:restart',
    'a turn completed by a run is recorded for memory extraction across a crash',
    async (env) => {
      const opened = await env.openStore();
      const sessionId = env.id();
      await opened.store.create({ id: sessionId });
      const run = await opened.store.beginRun(sessionId, {
        userMessage: { role: 'user', content: 'q' },
      });
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'a' }] });
      await drainCallbacks();
      const afterCrash = await env.restartAfterCrash(opened);
      expect(await afterCrash.store.lifecycle.hasUncommittedWork(sessionId)).toBe(true);
    },
  );
}
