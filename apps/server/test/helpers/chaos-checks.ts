import { isDeepStrictEqual } from 'node:util';
import { createScriptedAgent } from '../../src/agents/scripted-agent.js';
import type { TurnRecord } from './chaos-client.js';
import type { Json, SseEvent } from './http-client.js';

const TERMINAL = new Set(['done', 'cancel', 'error', 'tool_limit', 'interrupted']);

/** The token texts the scripted agent streams for `content`, in order (it is deterministic). */
export async function scriptedTokens(content: string, answerWords: number): Promise<string[]> {
  const agent = createScriptedAgent({ tokenDelayMs: 0, answerWords });
  const tokens: string[] = [];
  for await (const event of agent.stream({
    sessionId: 'expected',
    messages: [{ role: 'user', content }],
    signal: new AbortController().signal,
  })) {
    if (event.type === 'token') tokens.push(event.text);
  }
  return tokens;
}

/** How one turn ended, for the summary. */
export type TurnOutcome = 'completed' | 'interrupted' | 'errored' | 'other';

export interface TurnCheck {
  problems: string[];
  outcome: TurnOutcome;
  /** Token records the client received (all of them are in the final journal, or a problem says not). */
  tokensSeen: number;
}

/**
 * Checks one turn against what the store holds afterwards: `journal` is the run's whole
 * stream read again from its start once the chaos is over, `messages` the session's
 * transcript. The client saw each record once, in order (checked as it arrived); here every
 * record it saw is in the journal under the same sequence with the same event id and data
 * (E2, B3: a record streamed was acknowledged, so it must survive the failover), the
 * journal is gapless with one ending, last; the transcript holds the run's streamed text
 * exactly (F1 for a run recovered after its owner died), the whole scripted answer when the
 * run completed, and one marker when it did not.
 */
export function checkTurn(
  turn: TurnRecord,
  journal: SseEvent[],
  messages: Json[],
  expectedTokens: string[],
): TurnCheck {
  const problems = [...turn.problems];
  const records = journal.filter((event) => event.id !== undefined);
  const seen = turn.events.filter((event) => event.id !== undefined);
  records.forEach((record, index) => {
    if (Number(record.id) !== index + 1) problems.push(`journal has ${record.id} at ${index + 1}`);
  });
  const eventIds = records.map((record) => record.data.eventId);
  if (new Set(eventIds).size !== eventIds.length) problems.push('an event id twice in the journal');
  const terminals = records.filter((record) => TERMINAL.has(record.event ?? ''));
  if (terminals.length > 1) problems.push(`${terminals.length} terminal records`);
  if (terminals.length === 1 && terminals[0] !== records.at(-1)) {
    problems.push('a record after the terminal record');
  }
  for (const record of seen) {
    const stored = records[Number(record.id) - 1];
    if (stored === undefined || !isDeepStrictEqual(stored, record)) {
      problems.push(
        `record ${record.id} (${record.event}) streamed as ${JSON.stringify(record.data)}, ` +
          `stored as ${stored === undefined ? 'nothing' : JSON.stringify(stored.data)}`,
      );
    }
  }
  if (turn.ending === null) problems.push('its stream never ended');
  const finalEnding = journal.at(-1);
  if (finalEnding?.event !== 'end') problems.push('the stream read afterwards did not end');
  else if (turn.ending !== null && turn.ending.terminalState !== finalEnding.data.terminalState) {
    problems.push(
      `ended ${turn.ending.terminalState} for its client, ${finalEnding.data.terminalState} afterwards`,
    );
  }

  const users = messages.filter(
    (message) => message.role === 'user' && message.content === turn.content,
  );
  if (users.length !== 1) problems.push(`its user message is in the transcript ${users.length}×`);
  const runMessages = messages.filter((message) => message.runId === turn.runId);
  const answerText = runMessages
    .filter((message) => message.role === 'assistant' && message.marker === undefined)
    .map((message) => (typeof message.content === 'string' ? message.content : ''))
    .join('');
  const tokens = records.filter((record) => record.event === 'token');
  const journalText = tokens.map((record) => record.data.data.text).join('');
  if (answerText !== journalText) {
    problems.push(
      `transcript answer ${JSON.stringify(answerText)} is not the journal's ${JSON.stringify(journalText)}`,
    );
  }
  const markers = runMessages.filter((message) => message.marker !== undefined);
  const state = finalEnding?.data?.terminalState;
  if (state === 'completed') {
    const texts = tokens.map((record) => record.data.data.text);
    if (!isDeepStrictEqual(texts, expectedTokens)) {
      problems.push(`completed with ${texts.length} tokens, expected ${expectedTokens.length}`);
    }
    if (markers.length !== 0) problems.push(`completed with ${markers.length} markers`);
  } else if (markers.length !== 1) {
    problems.push(`ended ${state} with ${markers.length} markers`);
  }
  const outcome: TurnOutcome =
    state === 'completed'
      ? 'completed'
      : state === 'interrupted-by-crash'
        ? 'interrupted'
        : state === 'errored'
          ? 'errored'
          : 'other';
  return {
    problems,
    outcome,
    tokensSeen: seen.filter((record) => record.event === 'token').length,
  };
}
