import { MemorySession, Runner } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KeepsakeSession,
  loadRunState,
  pausedRunOf,
  RunStateAlreadyResumedError,
  readRunState,
  saveRunState,
} from '../src/index.js';
import { travelAgents } from './helpers/agents.js';
import { type Backend, createBackend } from './helpers/backends.js';

describe.each(['memory', 'fs'] as const)('paused runs on %s', (name) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await createBackend(name);
  });
  afterAll(() => backend.dispose());

  it('a run paused for approval is stored with its session; another instance resumes it; a second resume is refused (B4)', async () => {
    const runner = new Runner({ tracingDisabled: true });
    const { travel } = travelAgents();
    const sessionId = `paused-${name}`;
    const first = new KeepsakeSession({ store: backend.open(), sessionId });
    const paused = await runner.run(travel, 'please book a flight', { session: first });
    expect(paused.interruptions).toHaveLength(1);
    const pauseId = await saveRunState(first, paused.state);
    expect(await pausedRunOf(first)).toMatchObject({
      pauseId,
      claimed: false,
      agentName: 'travel',
    });

    // The first instance is gone; two approvers race on two other instances.
    const approvers = [backend.open(), backend.open()].map(
      (store) => new KeepsakeSession({ store, sessionId }),
    );
    const shown = await readRunState(approvers[0]!, travel);
    expect(shown?.getInterruptions().map((item) => item.name)).toEqual(['book_flight']);
    const claims = await Promise.allSettled(
      approvers.map((session) => loadRunState(session, travel)),
    );
    const won = claims.filter((claim) => claim.status === 'fulfilled');
    const lost = claims.filter((claim) => claim.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(RunStateAlreadyResumedError.isInstance((lost[0] as PromiseRejectedResult).reason)).toBe(
      true,
    );
    const winner = approvers[claims.indexOf(won[0]!)]!;
    const state = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof loadRunState>>>)
      .value!;
    state.approve(state.getInterruptions()[0]!);
    const resumed = await runner.run(travel, state, { session: winner });
    expect(resumed.finalOutput).toBe('Done: booked 2 seats to Lisbon. Anything else?');
    await expect(loadRunState(first, travel)).rejects.toSatisfy((error) =>
      RunStateAlreadyResumedError.isInstance(error),
    );
    await expect(loadRunState(first, travel, { pauseId: 'another' })).rejects.toSatisfy((error) =>
      RunStateAlreadyResumedError.isInstance(error),
    );
    expect(await pausedRunOf(first)).toMatchObject({ pauseId, claimed: true });

    // The history is what MemorySession holds after the same calls.
    const memory = new MemorySession();
    const reference = travelAgents().travel;
    const again = await runner.run(reference, 'please book a flight', { session: memory });
    again.state.approve(again.interruptions[0]!);
    await runner.run(reference, again.state, { session: memory });
    expect(
      await new KeepsakeSession({ store: backend.open(), sessionId }).getItems(),
    ).toStrictEqual(await memory.getItems());
  });

  it('a session with no paused run resumes nothing', async () => {
    const session = new KeepsakeSession({ store: backend.open(), sessionId: `none-${name}` });
    expect(await loadRunState(session, travelAgents().travel)).toBeNull();
    expect(await pausedRunOf(session)).toBeNull();
  });
});
