import {
  type AgentInputItem,
  MemorySession,
  Runner,
  RunState,
  type Session,
} from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepsakeSession } from '../src/index.js';
import { travelAgents } from './helpers/agents.js';
import {
  type Backend,
  type BackendName,
  createBackend,
  startServers,
  stopServers,
} from './helpers/backends.js';

/**
 * Behaviour parity with the SDK's own `MemorySession`: the same sequence of Runner calls (a
 * scripted model, so both sides get the same answers) and direct session calls runs against a
 * `MemorySession` and a `KeepsakeSession`, and after each step the two histories must be the
 * same, byte for byte as JSON and deeply (undefined properties and bytes included). Half of the
 * Keepsake steps go through a second store over the same backend (a second server instance),
 * and the last check reads the history from a third, fresh store (a restart).
 *
 * S3 runs on a Ceph RADOS Gateway and is slow: it runs the short sequence only.
 */
const backendNames: BackendName[] = ['memory', 'fs', 'redis', 's3'];

type Step = { name: string; act(session: Session, side: Side): Promise<unknown> };

interface Side {
  runner: Runner;
  agents: ReturnType<typeof travelAgents>;
}

function run(input: string | AgentInputItem[]): Step['act'] {
  return async (session, { runner, agents }) => {
    const result = await runner.run(agents.travel, input, { session });
    return { final: result.finalOutput ?? null, interruptions: result.interruptions.length };
  };
}

function runStreamed(input: string | AgentInputItem[]): Step['act'] {
  return async (session, { runner, agents }) => {
    const result = await runner.run(agents.travel, input, { session, stream: true });
    const names: string[] = [];
    for await (const event of result) {
      if (event.type === 'run_item_stream_event') names.push(event.name);
    }
    await result.completed;
    return { final: result.finalOutput ?? null, names, interruptions: result.interruptions.length };
  };
}

/** A run that pauses for approval, its state serialized (as saved), then resumed. */
function runApproved(input: string, decision: 'approve' | 'reject', stream: boolean): Step['act'] {
  return async (session, { runner, agents }) => {
    const paused = await runner.run(agents.travel, input, { session });
    expect(paused.interruptions).toHaveLength(1);
    const state = await RunState.fromString(agents.travel, paused.state.toString());
    const interruption = state.getInterruptions()[0]!;
    if (decision === 'approve') state.approve(interruption);
    else state.reject(interruption);
    if (!stream) return (await runner.run(agents.travel, state, { session })).finalOutput;
    const resumed = await runner.run(agents.travel, state, { session, stream: true });
    for await (const _event of resumed);
    await resumed.completed;
    return resumed.finalOutput;
  };
}

/** Items of every kind the SDK produces, added directly, with values JSON has no form for. */
const exoticItems: AgentInputItem[] = [
  {
    type: 'message',
    role: 'user',
    content: [
      { type: 'input_text', text: 'What is in this picture?' },
      { type: 'input_image', image: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
      { type: 'input_file', file: { id: 'file_1' }, filename: 'notes.pdf' },
    ],
    providerData: { $ref: 'dollar key', nested: { $bytes: 'not a tag' } },
  },
  { type: 'message', role: 'system', content: 'Be brief.' },
  {
    type: 'hosted_tool_call',
    id: 'ws_1',
    name: 'web_search_call',
    status: 'completed',
    arguments: '{"query":"lisbon"}',
    output: 'three results',
    providerData: { action: { type: 'search', query: 'lisbon' } },
  },
  {
    type: 'function_call_result',
    name: 'render_chart',
    callId: 'call_chart',
    status: 'completed',
    output: {
      type: 'image',
      image: { data: new Uint8Array([137, 80, 78, 71, 0, 255]), mediaType: 'image/png' },
    },
  } as AgentInputItem,
  {
    type: 'computer_call',
    id: 'cu_1',
    callId: 'call_computer',
    status: 'completed',
    action: { type: 'click', x: 10, y: 20, button: 'left' },
  } as AgentInputItem,
  {
    type: 'computer_call_result',
    callId: 'call_computer',
    output: { type: 'computer_screenshot', data: 'data:image/png;base64,AAAA' },
  } as AgentInputItem,
  { type: 'reasoning', id: 'rs_x', content: [], providerData: { summary: [] } } as AgentInputItem,
  {
    type: 'unknown',
    providerData: { anything: [1, 'two', null, { three: true }] },
  } as AgentInputItem,
  {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'ünïcødé ✓ "quoted" \\ back\nslash' }],
    providerData: undefined,
  } as AgentInputItem,
];

const fullSequence: Step[] = [
  { name: 'a first run', act: run('hello there') },
  { name: 'a streamed run with reasoning and a tool', act: runStreamed('weather please') },
  {
    name: 'a run paused for approval, approved',
    act: runApproved('book a flight', 'approve', false),
  },
  {
    name: 'a run paused, rejected, resumed streamed',
    act: runApproved('book it again', 'reject', true),
  },
  // Last of the paused runs: the SDK cannot serialize a RunState whose history holds bytes.
  { name: 'items of every kind, added directly', act: (session) => session.addItems(exoticItems) },
  { name: 'getItems(3)', act: (session) => session.getItems(3) },
  {
    name: 'getItems(0) and getItems(1000)',
    act: async (session) => [await session.getItems(0), (await session.getItems(1000)).length],
  },
  { name: 'popItem', act: (session) => session.popItem() },
  { name: 'popItem again', act: (session) => session.popItem() },
  { name: 'a handoff to another agent', act: run('where is my invoice') },
  {
    name: 'a run with item input',
    act: run([
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'weather in items' }],
      },
    ]),
  },
  { name: 'clearSession', act: (session) => session.clearSession() },
  { name: 'popItem on an empty session', act: (session) => session.popItem() },
  { name: 'a run after the clear', act: runStreamed('hello again') },
];

const shortSequence: Step[] = fullSequence.filter((step) =>
  [
    'a first run',
    'a run paused for approval, approved',
    'items of every kind, added directly',
    'popItem',
    'clearSession',
    'a run after the clear',
  ].includes(step.name),
);

function normalized(value: unknown): string {
  return JSON.stringify(value);
}

describe.each(backendNames)('KeepsakeSession on %s against MemorySession', (name) => {
  let backend: Backend;
  beforeAll(async () => {
    await startServers([name]);
    backend = await createBackend(name);
  }, 180_000);
  afterAll(async () => {
    await backend?.dispose();
    await stopServers();
  });

  it('gives the same history after every step (byte for byte), across instances and a restart', async () => {
    const sequence = name === 's3' ? shortSequence : fullSequence;
    const first = backend.open();
    const second = backend.open();
    const sessionId = `parity-${name}`;
    const memory = new MemorySession({ sessionId });
    const keepsake = [first, second].map((store) => new KeepsakeSession({ store, sessionId }));
    const memorySide: Side = {
      runner: new Runner({ tracingDisabled: true }),
      agents: travelAgents(),
    };
    const keepsakeSide: Side = {
      runner: new Runner({ tracingDisabled: true }),
      agents: travelAgents(),
    };
    for (const [index, step] of sequence.entries()) {
      const session = keepsake[index % 2]!;
      const expected = await step.act(memory, memorySide);
      const actual = await step.act(session, keepsakeSide);
      expect(normalized(actual), step.name).toBe(normalized(expected));
      expect(actual, step.name).toStrictEqual(expected);
      const reader = keepsake[(index + 1) % 2]!;
      const history = await memory.getItems();
      expect(normalized(await reader.getItems()), step.name).toBe(normalized(history));
      expect(await reader.getItems(), step.name).toStrictEqual(history);
      expect(await reader.getItems(2), step.name).toStrictEqual(await memory.getItems(2));
    }
    const restarted = new KeepsakeSession({ store: backend.open(), sessionId });
    expect(await restarted.getItems()).toStrictEqual(await memory.getItems());
    const listed = (await restarted.store.list()).sessions.find(
      (summary) => summary.id === restarted.keepsakeId,
    );
    expect(listed?.title).toBe('hello there');
  }, 240_000);
});
