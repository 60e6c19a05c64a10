import { createSessionStore } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import {
  type AgentStreamItem,
  createAgentStreams,
  KeepsakeSession,
  loadRunState,
  RunStateAlreadyResumedError,
  readRunState,
  saveRunState,
} from '@keepsake/openai-agents';
import { type AgentInputItem, Runner } from '@openai/agents-core';
import { createTravelAgent } from './travel-agent.js';

export interface ChatOptions {
  /** The directory the fs store keeps its sessions in. */
  directory: string;
  /** Where the example says what happens. */
  log: (line: string) => void;
}

/**
 * One conversation, told step by step:
 * 1. server A runs a turn that uses a tool at once (`get_weather`);
 * 2. the next turn calls `book_flight`, which needs approval: the run pauses, and server A
 *    stores its `RunState` with the session (`saveRunState`) and stops;
 * 3. server B, a second store over the same directory (another process, or the same one after
 *    a restart), shows what waits for approval, claims the paused run (`loadRunState`),
 *    approves it and resumes it as a streamed run, whose events are a Keepsake run journal;
 * 4. a client reconnecting to server C reads the stream from the journal after the last event
 *    it saw; a second approval of the same pause is refused.
 */
export async function runChat({ directory, log }: ChatOptions): Promise<void> {
  const agent = createTravelAgent();
  const runner = new Runner({ tracingDisabled: true });
  const sessionId = 'trip-42';
  const open = () => createSessionStore({ adapter: fsAdapter({ directory }) });
  log(`store: fs, in ${directory}`);

  // ── Server A ──────────────────────────────────────────────────────────────────────────
  const serverA = open();
  const sessionA = new KeepsakeSession({ store: serverA, sessionId });
  const question = 'What is the weather in Lisbon?';
  log(`[A] user: ${question}`);
  const first = await runner.run(agent, question, { session: sessionA });
  log(`[A] assistant: ${String(first.finalOutput)}`);

  const booking = 'Please book a flight to Lisbon for two.';
  log(`[A] user: ${booking}`);
  const paused = await runner.run(agent, booking, { session: sessionA });
  for (const interruption of paused.interruptions) {
    log(`[A] paused: ${interruption.name} ${interruption.arguments} needs approval`);
  }
  // Durable before it resolves: server A may die right after this line.
  await saveRunState(sessionA, paused.state);
  log('[A] saved the paused run with the session; server A stops');
  await serverA.close();

  // ── Server B ──────────────────────────────────────────────────────────────────────────
  const serverB = open();
  const sessionB = new KeepsakeSession({ store: serverB, sessionId });
  const waiting = await readRunState(sessionB, agent);
  for (const interruption of waiting?.getInterruptions() ?? []) {
    log(`[B] waiting for approval: ${interruption.name} ${interruption.arguments}`);
  }
  // Claims the pause: of two approvers racing, on one server or two, one gets the state.
  const state = await loadRunState(sessionB, agent);
  if (state === null) throw new Error('the paused run was not stored');
  for (const interruption of state.getInterruptions()) state.approve(interruption);
  log('[B] approved; the resumed run streams:');
  const streams = createAgentStreams({ store: serverB, runner });
  const started = await streams.run(agent, state, { session: sessionB });
  const seen: AgentStreamItem[] = [];
  // Text deltas arrive word by word; a run of them is shown on one line.
  let words: { sequence: number; text: string }[] = [];
  for await (const item of started.events) {
    seen.push(item);
    const delta = deltaOf(item);
    if (delta !== null) {
      words.push(delta);
      continue;
    }
    if (words.length > 0) {
      const joined = JSON.stringify(words.map((word) => word.text).join(''));
      log(`[B]   #${words[0]!.sequence}-#${words.at(-1)!.sequence} text ${joined}`);
    }
    words = [];
    log(`[B]   ${describe(item)}`);
  }
  const outcome = await started.done;
  log(`[B] the run ${outcome.state}`);

  // ── Server C: a client that saw five events reconnects to another server ──────────────
  const serverC = open();
  const lastSeen = seen.filter((item) => item.type === 'event')[4]!.sequence;
  const follower = createAgentStreams({ store: serverC, runner });
  const rest = await follower.follow(sessionId, { runId: started.runId, after: lastSeen });
  let rested = '';
  let ending = 'no ending';
  for await (const item of rest ?? []) {
    if (item.type === 'end') ending = `end: ${item.state ?? 'unknown'}`;
    rested += deltaOf(item)?.text ?? '';
  }
  log(
    `[C] a client reconnecting after event #${lastSeen} reads ${JSON.stringify(rested)}, then ${ending}`,
  );

  try {
    await loadRunState(new KeepsakeSession({ store: serverC, sessionId }), agent);
    log('[C] a second approval resumed the run again (it must not)');
  } catch (error) {
    if (!RunStateAlreadyResumedError.isInstance(error)) throw error;
    log('[C] a second approval of the same pause is refused: RunStateAlreadyResumedError');
  }

  const history = await new KeepsakeSession({ store: serverC, sessionId }).getItems();
  log(`history of ${sessionId} (${history.length} items):`);
  for (const [index, item] of history.entries()) log(`  ${index + 1}. ${describeItem(item)}`);
  await Promise.all([serverB.close(), serverC.close()]);
}

/** The text of a streamed text delta, with its journal sequence, or null for any other item. */
function deltaOf(item: AgentStreamItem): { sequence: number; text: string } | null {
  if (item.type !== 'event' || item.event.type !== 'raw_model_stream_event') return null;
  const { data } = item.event;
  return data.type === 'output_text_delta'
    ? { sequence: item.sequence, text: String(data.delta) }
    : null;
}

/** One line for an item of a stream: its journal sequence and what it is. */
function describe(item: AgentStreamItem): string {
  if (item.type === 'end') return `end: ${item.state ?? 'unknown'}`;
  const { event } = item;
  if (event.type === 'raw_model_stream_event')
    return `#${item.sequence} ${String(event.data.type)}`;
  if (event.type === 'run_item_stream_event') return `#${item.sequence} ${event.name}`;
  return `#${item.sequence} agent ${event.agent.name}`;
}

/** One line for a history item: who said what, or which tool was called with what. */
function describeItem(item: AgentInputItem): string {
  if (item.type === 'function_call') return `tool call: ${item.name} ${item.arguments}`;
  if (item.type === 'function_call_result') {
    const output = item.output as { text?: string } | string;
    return `tool result: ${typeof output === 'string' ? output : output.text}`;
  }
  if ((item.type === undefined || item.type === 'message') && 'role' in item) {
    const content = item.content;
    const text =
      typeof content === 'string'
        ? content
        : content.map((part) => ('text' in part ? part.text : '')).join('');
    return `${item.role}: ${text}`;
  }
  return item.type ?? 'item';
}
