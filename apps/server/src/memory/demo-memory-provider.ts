import type { MemoryAgent, MemoryCommitContext, Message, SessionStore } from '@keepsake/core';

/** One batch the demo provider extracted from a session's completed turns. */
export interface MemoryRecord {
  sessionId: string;
  fromGeneration: number;
  toGeneration: number;
  extractedAt: number;
  /** Completed turns this batch read (a cancelled, failed or interrupted turn is not one). */
  turns: number;
  /** Short statements taken from the user's messages. */
  items: string[];
}

/** Phrases that usually carry something worth remembering about the user. */
const memorablePattern =
  /\b(i am|i'm|my|i like|i love|i prefer|i hate|i work|i live|call me|remember)\b/i;

/**
 * A stand-in for a batch-extraction memory provider (a vector store, a profile service).
 * It shows the memory lifecycle at work: it is called only at session boundaries, only for
 * completed turns, and it records what it extracted so the UI can show it. Records live in
 * process memory: a real provider keeps its own storage.
 */
export class DemoMemoryProvider {
  private readonly recordsByNamespace = new Map<string, MemoryRecord[]>();
  /** Per namespace and session: ids of user messages already extracted. */
  private readonly extracted = new Map<string, Set<string>>();
  private readonly agents = new Map<string, MemoryAgent>();

  /** The lifecycle handle of one session; the same object each time, so G5 sees one owner. */
  agentFor(namespace: string, store: SessionStore, sessionId: string): MemoryAgent {
    const key = `${namespace}/${sessionId}`;
    let agent = this.agents.get(key);
    if (agent === undefined) {
      agent = {
        commitMemory: (context) => this.extract(namespace, store, context),
        close: async () => {
          this.agents.delete(key);
        },
      };
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Newest first. */
  records(namespace: string): MemoryRecord[] {
    return [...(this.recordsByNamespace.get(namespace) ?? [])].reverse();
  }

  /** B8: a deleted session's memory goes with it. */
  forgetSession(namespace: string, sessionId: string): void {
    const key = `${namespace}/${sessionId}`;
    this.extracted.delete(key);
    this.agents.delete(key);
    const records = this.recordsByNamespace.get(namespace);
    if (records !== undefined) {
      this.recordsByNamespace.set(
        namespace,
        records.filter((record) => record.sessionId !== sessionId),
      );
    }
  }

  private async extract(
    namespace: string,
    store: SessionStore,
    context: MemoryCommitContext,
  ): Promise<void> {
    const session = await store.load(context.sessionId);
    context.signal.throwIfAborted();
    const key = `${namespace}/${context.sessionId}`;
    const seen = this.extracted.get(key) ?? new Set<string>();
    const fresh = completedTurnQuestions(session.messages).filter(
      (message) => !seen.has(message.id),
    );
    if (fresh.length === 0) return;
    const items = fresh.flatMap(extractItems);
    for (const message of fresh) seen.add(message.id);
    this.extracted.set(key, seen);
    const records = this.recordsByNamespace.get(namespace) ?? [];
    records.push({
      sessionId: context.sessionId,
      fromGeneration: context.fromGeneration,
      toGeneration: context.toGeneration,
      extractedAt: Date.now(),
      turns: fresh.length,
      items,
    });
    this.recordsByNamespace.set(namespace, records);
  }
}

/**
 * The user messages whose turn completed: answered by the assistant, with no marker (a
 * cancel, a failure, a crash, the tool limit) ending the turn. A provider that remembers
 * only completed turns never learns from an answer the user stopped or never got.
 */
export function completedTurnQuestions(messages: readonly Message[]): Message[] {
  const questions: Message[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role !== 'user') continue;
    let answered = false;
    let ended = false;
    for (let next = index + 1; next < messages.length; next++) {
      const reply = messages[next]!;
      if (reply.role === 'user') break;
      if (reply.marker !== undefined) ended = true;
      else if (reply.role === 'assistant') answered = true;
    }
    if (answered && !ended) questions.push(message);
  }
  return questions;
}

function extractItems(message: Message): string[] {
  const text = typeof message.content === 'string' ? message.content : '';
  const sentences = text
    .split(/(?<=[.!?])\s+/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0);
  const memorable = sentences.filter((sentence) => memorablePattern.test(sentence));
  if (memorable.length > 0) return memorable.map((sentence) => truncate(sentence, 160));
  const topic = text.trim().replace(/\s+/g, ' ');
  return topic.length > 0 ? [`Talked about: ${truncate(topic, 80)}`] : [];
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}
