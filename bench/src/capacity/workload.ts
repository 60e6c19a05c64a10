import type { MessageInput, SessionStore } from '@keepsake/core';

/** The turn every stream runs, and the sessions it is stored in: the same at every scale. */
export interface TurnShape {
  /** Token events of one answer. */
  readonly tokensPerTurn: number;
  /** Mean gap between two tokens (a model's pace); each gap is drawn between 0.5× and 1.5×. */
  readonly tokenIntervalMs: number;
  readonly tokenChars: number;
  readonly userChars: number;
  /** Messages each stored session holds before any turn (user and assistant, alternating). */
  readonly storedMessages: number;
  readonly storedUserChars: number;
  readonly storedAssistantChars: number;
}

export const TURN: TurnShape = {
  tokensPerTurn: 120,
  tokenIntervalMs: 25,
  tokenChars: 24,
  userChars: 200,
  storedMessages: 6,
  storedUserChars: 200,
  storedAssistantChars: 1_000,
};

/** A small deterministic generator (mulberry32), so every run draws the same gaps. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function sessionId(index: number): string {
  return `c${index}`;
}

/**
 * Creates `count` sessions starting at `from`, each holding the stored messages, one
 * durable create each, `concurrency` at a time.
 */
export async function storeSessions(
  store: SessionStore,
  from: number,
  count: number,
  concurrency = 16,
): Promise<void> {
  const messages: MessageInput[] = Array.from({ length: TURN.storedMessages }, (_, index) =>
    index % 2 === 0
      ? { role: 'user', content: 'u'.repeat(TURN.storedUserChars) }
      : { role: 'assistant', content: 'a'.repeat(TURN.storedAssistantChars) },
  );
  let next = from;
  const end = from + count;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < end) {
        const index = next++;
        await store.create(
          { id: sessionId(index), title: `session ${index}`, messages },
          { fsync: true },
        );
      }
    }),
  );
}

export interface StreamsOptions {
  readonly store: SessionStore;
  /** Another store on the same backend (another instance), or null: no remote followers. */
  readonly followerStore: SessionStore | null;
  readonly streams: number;
  /** Streams whose runs a follower on `followerStore` follows: the first `followed`. */
  readonly followed: number;
  /** Sessions the streams take turns on: stream i uses the ids i, i + streams, … below this. */
  readonly sessions: number;
  readonly warmupMs: number;
  readonly measureMs: number;
  /** Called at the start and at the end of the measured window (take snapshots there). */
  readonly atWindowStart: () => Promise<void>;
  readonly atWindowEnd: () => Promise<void>;
  readonly seed: number;
}

export interface StreamsResult {
  readonly seconds: number;
  readonly turns: number;
  readonly tokens: number;
  readonly meanTurnMs: number;
  /** Follower endings other than `completed` (should be none). */
  readonly followerProblems: number;
  readonly followedRuns: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `streams` streams running turns back to back, as the reference server's run executor
 * does: a refreshing load, `beginRun` (the user turn durable), token appends at a model's
 * pace, `complete()`. The first `followed` streams' runs are also followed from
 * `followerStore`, as an SSE client on another instance would. Counts what completed inside
 * the window between `warmupMs` and `warmupMs + measureMs`.
 */
export async function runStreams(options: StreamsOptions): Promise<StreamsResult> {
  const { store, followerStore } = options;
  const userText = 'q'.repeat(TURN.userChars);
  const tokenText = 't'.repeat(TURN.tokenChars);
  let windowStart = Number.POSITIVE_INFINITY;
  let windowEnd = Number.POSITIVE_INFINITY;
  let stopping = false;
  let turns = 0;
  let tokens = 0;
  let turnMsSum = 0;
  let followerProblems = 0;
  let followedRuns = 0;
  const followers: Promise<void>[] = [];
  const inWindow = (at: number) => at >= windowStart && at <= windowEnd;

  const follow = async (id: string, runId: string) => {
    if (followerStore === null) return;
    followedRuns++;
    for await (const item of followerStore.followRun(id, runId, { after: 0 })) {
      if (item.kind === 'end' && item.ending.state !== 'completed') followerProblems++;
    }
  };

  const stream = async (index: number) => {
    const draw = random(options.seed + index);
    const ids: string[] = [];
    for (let at = index; at < options.sessions; at += options.streams) ids.push(sessionId(at));
    // Streams start spread over one turn, not all at once.
    await sleep(draw() * TURN.tokensPerTurn * TURN.tokenIntervalMs);
    for (let turn = 0; !stopping; turn++) {
      const id = ids[turn % ids.length] as string;
      const started = performance.now();
      await store.load(id, { refresh: true });
      const run = await store.beginRun(id, { userMessage: { role: 'user', content: userText } });
      if (index < options.followed) followers.push(follow(id, run.runId));
      for (let token = 0; token < TURN.tokensPerTurn; token++) {
        await sleep(TURN.tokenIntervalMs * (0.5 + draw()));
        await run.append({ type: 'token', data: { text: tokenText } });
        if (inWindow(performance.now())) tokens++;
      }
      await run.complete();
      const ended = performance.now();
      if (inWindow(ended)) {
        turns++;
        turnMsSum += ended - started;
      }
    }
  };

  const running = Array.from({ length: options.streams }, (_, index) => stream(index));
  await sleep(options.warmupMs);
  await options.atWindowStart();
  windowStart = performance.now();
  await sleep(options.measureMs);
  windowEnd = performance.now();
  await options.atWindowEnd();
  stopping = true;
  await Promise.all(running);
  await Promise.all(followers);
  return {
    seconds: (windowEnd - windowStart) / 1_000,
    turns,
    tokens,
    meanTurnMs: turns > 0 ? turnMsSum / turns : 0,
    followerProblems,
    followedRuns,
  };
}
