import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Agent, AgentEvent, AgentTurnInput } from './agent.js';

export interface ScriptedAgentOptions {
  /** Delay between streamed events; 0 streams as fast as the store appends. @default 35 */
  tokenDelayMs?: number;
  /** Words in each answer. @default 60 */
  answerWords?: number;
}

const answerText =
  'Keepsake journals every token of this answer as it streams, so a reload picks up where it ' +
  'left off, a cancel keeps what was already said, and a crash recovers the partial output ' +
  'from the journal above an interrupted marker. The transcript is saved atomically with a ' +
  'revision, and a second server on the same data directory resumes the stream by sequence.';

/**
 * The offline default: a deterministic agent that thinks, calls one tool, and streams an
 * answer word by word at a configurable speed. The same question always yields the same
 * events, which keeps the demo, the tests and the crash drills reproducible.
 */
export function createScriptedAgent(options: ScriptedAgentOptions = {}): Agent {
  const tokenDelayMs = options.tokenDelayMs ?? 35;
  const answerWords = options.answerWords ?? 60;
  return {
    name: 'scripted',
    stream: (input) => streamScript(input, tokenDelayMs, answerWords),
  };
}

async function* streamScript(
  input: AgentTurnInput,
  tokenDelayMs: number,
  answerWords: number,
): AsyncGenerator<AgentEvent> {
  const question = lastUserText(input);
  const digest = createHash('sha256').update(question).digest();
  const topic = question.length > 48 ? `${question.slice(0, 48)}…` : question;
  const pause = async () => {
    if (tokenDelayMs > 0) await delay(tokenDelayMs, undefined, { signal: input.signal });
    input.signal.throwIfAborted();
  };

  for (const text of ['Looking at the question', ` “${topic}”`, ' — checking the notes first.']) {
    await pause();
    yield { type: 'reasoning', text };
  }
  const toolCallId = `call_${digest.toString('hex').slice(0, 12)}`;
  await pause();
  yield { type: 'tool', toolCallId, name: 'search_notes', args: { query: topic } };
  await pause();
  yield {
    type: 'tool_result',
    toolCallId,
    result: { matches: (digest[0] ?? 0) % 5, note: `Nothing stored about “${topic}” yet.` },
  };

  const words = answerText.split(' ');
  const introduction = `You asked: “${topic}”. `;
  await pause();
  yield { type: 'token', text: introduction };
  for (let index = 0; index < answerWords; index++) {
    await pause();
    let word = words[index % words.length]!;
    if (index === answerWords - 1 && !/[.!?]$/.test(word)) word = `${word.replace(/[,;]$/, '')}.`;
    yield { type: 'token', text: index === 0 ? word : ` ${word}` };
  }
}

function lastUserText(input: AgentTurnInput): string {
  for (let index = input.messages.length - 1; index >= 0; index--) {
    const message = input.messages[index]!;
    if (message.role === 'user') return message.content.trim().replace(/\s+/g, ' ');
  }
  return '';
}
