/** One chat turn as a contender ran it: the figures and what to check afterwards. */
export interface ChatTurn {
  readonly sessionId: string;
  readonly runId: string;
  /** From the send until the user's turn was durable (the server's 202, or `beginRun`). */
  readonly sendMs: number;
  /** From the send until the run's first event reached the client (or its append resolved). */
  readonly firstEventMs: number;
  /** The token texts the client saw, in order: the transcript must end up saying exactly this. */
  readonly streamedText: string;
}

/** What one trial measured, as the section's tables take it. */
export interface TrialFigures {
  readonly turns: number;
  readonly elapsedMs: number;
  readonly sendP50: number;
  readonly sendP99: number;
  readonly firstEventP50: number;
  readonly firstEventP99: number;
  readonly rssBytes: number;
  /** Completed turns whose stored answer was compared with what was streamed. */
  readonly checked: number;
  /** Each turn whose stored answer differs from its streamed tokens (empty when all match). */
  readonly mismatches: readonly string[];
  /** Sends refused as busy (the previous turn not yet released) and sent again. */
  readonly busyRetries: number;
}

/**
 * Runs `chats` chat loops for `durationMs`: each sends, follows its run to the end, and
 * sends again while time remains (a turn in progress at the deadline completes).
 */
export async function runChatLoops(
  chats: number,
  durationMs: number,
  turn: (chat: number, index: number) => Promise<ChatTurn>,
): Promise<{ turns: ChatTurn[]; elapsedMs: number }> {
  const turns: ChatTurn[] = [];
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: chats }, async (_, chat) => {
      for (let index = 0; performance.now() < deadline; index++) {
        turns.push(await turn(chat, index));
      }
    }),
  );
  return { turns, elapsedMs: performance.now() - started };
}

/** The question of a chat's turn: distinct, so every answer is distinct too. */
export function questionFor(chat: number, index: number): string {
  return `Chat ${chat}, question ${index}: what does a durable session keep?`;
}

export function summarizeTrial(
  run: { turns: readonly ChatTurn[]; elapsedMs: number },
  extra: { rssBytes: number; mismatches: readonly string[]; busyRetries: number },
): TrialFigures {
  const sends = run.turns.map((turn) => turn.sendMs).sort((left, right) => left - right);
  const firsts = run.turns.map((turn) => turn.firstEventMs).sort((left, right) => left - right);
  return {
    turns: run.turns.length,
    elapsedMs: run.elapsedMs,
    sendP50: percentile(sends, 0.5),
    sendP99: percentile(sends, 0.99),
    firstEventP50: percentile(firsts, 0.5),
    firstEventP99: percentile(firsts, 0.99),
    rssBytes: extra.rssBytes,
    checked: run.turns.length,
    mismatches: extra.mismatches,
    busyRetries: extra.busyRetries,
  };
}

/**
 * The stored answer of a run (its assistant messages, markers left out) against what was
 * streamed; a description of the difference, or null when they are equal.
 */
export function compareAnswer(
  turn: ChatTurn,
  messages: ReadonlyArray<{
    role: string;
    content: unknown;
    runId?: string | undefined;
    marker?: unknown;
  }>,
): string | null {
  const stored = messages
    .filter((message) => message.runId === turn.runId && message.role === 'assistant')
    .filter((message) => message.marker === undefined)
    .map((message) => (typeof message.content === 'string' ? message.content : ''))
    .join('');
  if (stored === turn.streamedText) return null;
  return `session ${turn.sessionId} run ${turn.runId}: stored ${stored.length} characters, streamed ${turn.streamedText.length}`;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}
