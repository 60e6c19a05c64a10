import type { Message, Session, SessionStore, ToolCall } from '@keepsake/core';
import type { UIMessage, UIMessageChunk } from 'ai';
import { chunkOfRecord } from './chunk-records.js';
import { answerMessageIdOf } from './ids.js';
import { readWholeJournal } from './journal-pages.js';
import { markerPartOf } from './marker-part.js';
import { messageFromChunks, OpenParts } from './message-from-chunks.js';
import { storedFieldsOf, uiMessageOfStored } from './stored-message.js';

type Part = UIMessage['parts'][number];

/**
 * A session as the AI SDK's `UIMessage[]`, in transcript order:
 *
 * - a message this package stored is given back as it was saved (stored-message.ts);
 * - an answer that did not complete (stopped, failed, or recovered after its server died)
 *   was written by core, not by this package: core folds the journal into plain text and
 *   adds a marker message. Its UI message is rebuilt from the run's journal, chunk by chunk,
 *   with the AI SDK's reducer, so it has every part that was streamed (data parts, sources,
 *   tool states), the id the stream gave it, and the marker as its last part;
 * - the pending turn's user message comes last while a run is live (its answer is the
 *   stream, which `resumeExistingStream` replays);
 * - any other Keepsake message (written by other code) becomes text, reasoning and tool parts.
 */
export async function chatMessagesOf(store: SessionStore, session: Session): Promise<UIMessage[]> {
  const entries = await chatEntriesOf(store, session);
  const messages = entries.map((entry) => entry.message);
  if (session.pending !== null) {
    const pendingUser = session.pending.userMessage;
    messages.push(uiMessageOfStored(pendingUser) ?? plainMessageOf(pendingUser, []));
  }
  return messages;
}

/** One UI message of a session and the stored messages it was made from. */
export interface ChatEntry {
  message: UIMessage;
  stored: Message[];
}

/** The transcript's UI messages with their provenance (the pending turn is not included). */
export async function chatEntriesOf(store: SessionStore, session: Session): Promise<ChatEntry[]> {
  const entries: ChatEntry[] = [];
  const list = session.messages;
  for (let index = 0; index < list.length; index++) {
    const message = list[index]!;
    const stored = uiMessageOfStored(message);
    if (stored !== null) {
      entries.push({ message: stored, stored: [message] });
      continue;
    }
    if (message.role === 'tool') {
      // Not a UI message; it stays with the message before it when that one is kept.
      entries.at(-1)?.stored.push(message);
      continue;
    }
    if (isFoldedOutput(message)) {
      let end = index + 1;
      while (
        end < list.length &&
        isFoldedOutput(list[end]!) &&
        list[end]!.runId === message.runId
      ) {
        // A marker closes its run's output.
        if (list[end - 1]!.marker !== undefined) break;
        end++;
      }
      const group = list.slice(index, end);
      entries.push({ message: await runAnswerOf(store, session, group), stored: group });
      index = end - 1;
      continue;
    }
    entries.push({ message: plainMessageOf(message, session.toolCalls), stored: [message] });
  }
  return entries;
}

/** An assistant message core wrote for a run: folded journal output or the run's marker. */
function isFoldedOutput(message: Message): boolean {
  return (
    message.role === 'assistant' &&
    message.runId !== undefined &&
    storedFieldsOf(message) === null &&
    (message.journal !== undefined || message.marker !== undefined || message.partial === true)
  );
}

async function runAnswerOf(
  store: SessionStore,
  session: Session,
  group: readonly Message[],
): Promise<UIMessage> {
  const runId = group[0]!.runId!;
  const marker = group.find((message) => message.marker !== undefined);
  const output = group.filter((message) => message.marker === undefined);
  const fallbackId = answerMessageIdOf(runId);
  const chunks = await journalChunks(store, session.id, runId);
  let answer: UIMessage;
  if (chunks !== null && chunks.length > 0) {
    const open = new OpenParts();
    for (const chunk of chunks) open.observe(chunk);
    answer = await messageFromChunks([...chunks, ...open.closingChunks()], fallbackId);
  } else {
    // No journal to rebuild from (removed, or unreadable): core's folded text is what is left.
    const parts = output.flatMap((message) => plainMessageOf(message, session.toolCalls).parts);
    answer = { id: fallbackId, role: 'assistant', parts };
  }
  if (marker?.marker !== undefined) {
    answer.parts.push(markerPartOf(marker.marker, textOf(marker)) as Part);
  }
  return answer;
}

async function journalChunks(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<UIMessageChunk[] | null> {
  let records: Awaited<ReturnType<typeof readWholeJournal>>;
  try {
    records = await readWholeJournal(store, sessionId, runId);
  } catch {
    // An unreadable journal must not make the chat unreadable: the folded text stands in.
    return null;
  }
  if (records === null) return null;
  return records.map(chunkOfRecord).filter((chunk) => chunk !== null);
}

/** A Keepsake message written by other code, as text, reasoning and tool parts. */
function plainMessageOf(message: Message, toolCalls: readonly ToolCall[]): UIMessage {
  const parts: Part[] = [];
  if (message.reasoning !== undefined && message.reasoning.length > 0) {
    parts.push({ type: 'reasoning', text: message.reasoning, state: 'done' });
  }
  const text = textOf(message);
  if (message.marker !== undefined) {
    parts.push(markerPartOf(message.marker, text) as Part);
  } else if (text.length > 0 || message.role !== 'assistant') {
    parts.push({ type: 'text', text, state: 'done' });
  }
  for (const call of toolCalls) {
    if (call.messageId === message.id) parts.push(toolPartOf(call));
  }
  const role = message.role === 'tool' ? 'assistant' : message.role;
  return { id: message.id, role, parts };
}

function toolPartOf(call: ToolCall): Part {
  const base = { type: 'dynamic-tool' as const, toolName: call.name, toolCallId: call.id };
  if (!call.done) return { ...base, state: 'input-available', input: call.args ?? null };
  if (call.isError === true) {
    const errorText = typeof call.result === 'string' ? call.result : JSON.stringify(call.result);
    return { ...base, state: 'output-error', input: call.args ?? null, errorText: errorText ?? '' };
  }
  return {
    ...base,
    state: 'output-available',
    input: call.args ?? null,
    output: call.result ?? null,
  };
}

function textOf(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}
