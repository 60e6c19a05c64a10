import { MemorySession, Runner } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentStreamItem,
  createAgentStreams,
  KeepsakeSession,
  loadRunState,
} from '../src/index.js';
import { travelAgents } from './helpers/agents.js';
import { type Backend, createBackend } from './helpers/backends.js';

async function readAll(items: AsyncIterable<AgentStreamItem>): Promise<AgentStreamItem[]> {
  const all: AgentStreamItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

function deltas(items: readonly AgentStreamItem[]): string {
  return items
    .map((item) =>
      item.type === 'event' &&
      item.event.type === 'raw_model_stream_event' &&
      item.event.data.type === 'output_text_delta'
        ? String(item.event.data.delta)
        : '',
    )
    .join('');
}

describe.each(['memory', 'fs'] as const)('streamed runs on %s', (name) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await createBackend(name);
  });
  afterAll(() => backend.dispose());

  it('journals every event (E2); a client reconnecting to another instance resumes after its last event (E9); the history matches MemorySession', async () => {
    const runner = new Runner({ tracingDisabled: true });
    const producer = backend.open();
    const streams = createAgentStreams({ store: producer, runner, pollIntervalMs: 10 });
    const sessionId = `streamed-${name}`;
    const session = new KeepsakeSession({ store: producer, sessionId });
    const { travel } = travelAgents();
    const started = await streams.run(travel, 'weather please', { session });
    const seen = await readAll(started.events);
    expect(await started.done).toMatchObject({ state: 'completed' });
    expect(seen.at(-1)).toMatchObject({ type: 'end', state: 'completed', marker: null });
    expect(deltas(seen)).toBe(
      'Let me check the weather. Done: Sunny, 24°C in Lisbon. Anything else?',
    );
    const names = seen.flatMap((item) =>
      item.type === 'event' && item.event.type === 'run_item_stream_event' ? [item.event.name] : [],
    );
    expect(names).toEqual([
      'reasoning_item_created',
      'message_output_created',
      'tool_called',
      'tool_output',
      'message_output_created',
    ]);

    // Another instance, from the fifth event on: the same events, in order, once.
    const elsewhere = createAgentStreams({ store: backend.open(), runner, pollIntervalMs: 10 });
    const fifth = seen[4] as Extract<AgentStreamItem, { type: 'event' }>;
    const resumed = await elsewhere.follow(sessionId, {
      runId: started.runId,
      after: fifth.sequence,
    });
    expect(await readAll(resumed!)).toEqual(seen.slice(5));

    const memory = new MemorySession();
    const reference = await runner.run(travelAgents().travel, 'weather please', {
      session: memory,
      stream: true,
    });
    for await (const _event of reference);
    await reference.completed;
    const reader = new KeepsakeSession({ store: backend.open(), sessionId });
    expect(await reader.getItems()).toStrictEqual(await memory.getItems());
    expect(await elsewhere.follow(sessionId)).toBeNull();
  });

  it('a streamed run paused for approval is saved; another instance resumes it streamed', async () => {
    const runner = new Runner({ tracingDisabled: true });
    const sessionId = `streamed-paused-${name}`;
    const first = backend.open();
    const { travel } = travelAgents();
    const streams = createAgentStreams({ store: first, runner });
    const started = await streams.run(travel, 'book a flight to Lisbon', {
      session: new KeepsakeSession({ store: first, sessionId }),
    });
    const outcome = await started.done;
    expect(outcome).toMatchObject({ state: 'paused', interruptions: 1 });
    expect((await readAll(started.events)).at(-1)).toMatchObject({ state: 'completed' });

    const second = backend.open();
    const session = new KeepsakeSession({ store: second, sessionId });
    const state = await loadRunState(session, travel);
    state!.approve(state!.getInterruptions()[0]!);
    const resumed = await createAgentStreams({ store: second, runner }).run(travel, state!, {
      session,
    });
    expect(await resumed.done).toMatchObject({
      state: 'completed',
      finalOutput: 'Done: booked 2 seats to Lisbon. Anything else?',
    });
    expect(deltas(await readAll(resumed.events))).toBe(
      'Done: booked 2 seats to Lisbon. Anything else?',
    );
    const memory = new MemorySession();
    const paused = await runner.run(travelAgents().travel, 'book a flight to Lisbon', {
      session: memory,
    });
    paused.state.approve(paused.interruptions[0]!);
    await runner.run(travelAgents().travel, paused.state, { session: memory });
    expect(await session.getItems()).toStrictEqual(await memory.getItems());
  });

  it('a stop from another instance keeps the input and what streamed, under one cancel marker (E6)', async () => {
    const runner = new Runner({ tracingDisabled: true });
    const sessionId = `streamed-stopped-${name}`;
    const store = backend.open();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let handedOut = 0;
    const { travel } = travelAgents({
      beforeDelta: async (index) => {
        handedOut = index;
        if (index === 3) await held;
      },
    });
    const streams = createAgentStreams({ store, runner, pollIntervalMs: 10 });
    const session = new KeepsakeSession({ store, sessionId });
    const started = await streams.run(travel, 'tell me something long', { session });
    const seen: AgentStreamItem[] = [];
    for await (const item of started.events) {
      seen.push(item);
      if (deltas(seen) === 'You said: tell ') break;
    }
    expect(handedOut).toBe(3);
    const other = createAgentStreams({ store: backend.open(), runner });
    expect(await other.cancel(sessionId)).toMatchObject({ cancelled: true });
    release();
    expect(await started.done).toEqual({ state: 'stopped' });
    const items = await new KeepsakeSession({ store: backend.open(), sessionId }).getItems();
    expect(items).toEqual([
      { type: 'message', role: 'user', content: 'tell me something long' },
      {
        type: 'message',
        role: 'assistant',
        status: 'incomplete',
        content: [{ type: 'output_text', text: 'You said: tell ' }],
      },
      { type: 'message', role: 'system', content: expect.any(String) },
    ]);
  });
});
