import {
  BackendUnavailableError,
  InvalidInputError,
  ManualClock,
  SessionBusyError,
  type SessionStore,
  type StoreEvent,
} from '@keepsake/core';
import { type UIMessage, type UIMessageChunk, validateUIMessages } from 'ai';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  createResumableStreamContext,
  loadChat,
  MARKER_PART_TYPE,
  type ResumableStreamContext,
  saveChat,
  sessionIdOfChat,
} from '../src/index.js';
import { messageFromChunks } from '../src/message-from-chunks.js';
import {
  answerWords,
  chunkStream,
  dataSchemas,
  gatedStream,
  readAll,
  readUntil,
  scriptedAnswer,
  userMessage,
} from './helpers/chunk-streams.js';
import { type Backend, createBackend } from './helpers/stores.js';

/**
 * The recovery grace, on the stores' ManualClock: a run is never taken for dead because the
 * machine was slow, only once a test moves the clock past it (F1). The contexts get the same
 * number, as their `graceMs` option asks; for them it is how long (wall time) a reader of
 * another instance's answer goes without news before it loads the chat, the load that
 * recovers a dead run: it only decides how soon such a test ends, never how.
 */
const GRACE_MS = 300;
const textOf = (chunks: readonly UIMessageChunk[]) =>
  chunks.map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : '')).join('');
const isMarker = (chunk: UIMessageChunk) => chunk.type === MARKER_PART_TYPE;

/** The store's next event that `matches`; take it before doing what causes the event. */
function nextEvent(
  store: SessionStore,
  matches: (event: StoreEvent) => boolean,
): Promise<StoreEvent> {
  return new Promise((resolve) => {
    const unsubscribe = store.on((event) => {
      if (!matches(event)) return;
      unsubscribe();
      resolve(event);
    });
  });
}

describe.each(['memory', 'fs'] as const)('resumable streams on %s', (backendName) => {
  let backend: Backend;
  let store: SessionStore;
  let context: ResumableStreamContext;
  let chatNumber = 0;
  const newChat = () => `${backendName}-chat-${++chatNumber}`;
  // Every instance over the backend reads this clock (see GRACE_MS).
  const clock = new ManualClock();

  beforeAll(async () => {
    backend = await createBackend(backendName, { clock });
    store = backend.open();
    context = createResumableStreamContext({ store, graceMs: GRACE_MS, pollIntervalMs: 20 });
  });
  afterAll(async () => {
    await context.settle();
    context.close();
    await backend.dispose();
  });

  /**
   * A second server instance over the same backend, with a short recovery grace; its
   * streams end with the test, passed or failed.
   */
  function secondInstance() {
    const other = backend.open({ recovery: { graceMs: GRACE_MS } });
    const otherContext = createResumableStreamContext({
      store: other,
      graceMs: GRACE_MS,
      pollIntervalMs: 20,
    });
    onTestFinished(() => otherContext.close());
    return { store: other, context: otherContext };
  }

  /**
   * A stream of `chunks` the test releases (gatedStream), released in full once the test
   * ends, passed or failed: a producer left waiting on it would keep `context.settle()` of
   * every later test waiting too, turning one failure into a row of timeouts.
   */
  function gated(chunks: readonly UIMessageChunk[]) {
    const gate = gatedStream(chunks);
    onTestFinished(() => gate.releaseAll());
    return gate;
  }

  it('a reload resumes: the replay starts from the first chunk; a finished answer replays to its end for a while (E9), then has nothing to resume', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(12));
    const gate = gated(chunks);
    const live = await context.resumableStream(chatId, () => gate.stream, {
      message: userMessage('q1', 'What does Keepsake keep?'),
    });
    gate.release(16);
    // The page reads part of the answer, then reloads (its connection closes).
    const beforeReload = await readUntil(live, (_, seen) => seen.length === 16);
    expect(await context.hasExistingStream(chatId)).not.toBeNull();
    // The reloaded page: the chat shows the question, the stream replays the answer.
    expect((await loadChat(store, chatId)).map((message) => message.id)).toEqual(['q1']);
    const resumed = await context.resumeExistingStream(chatId);
    expect(resumed).not.toBeNull();
    gate.releaseAll();
    const replayed = await readAll(resumed!);
    expect(replayed.slice(0, 16)).toEqual(beforeReload);
    expect(replayed.map((chunk) => chunk.type)).toEqual(chunks.map((chunk) => chunk.type));
    expect(textOf(replayed)).toBe(textOf(chunks));
    await context.settle();
    // A client that only reconnects after the end still gets the answer and its finish.
    const runId = await context.hasExistingStream(chatId);
    expect(runId).not.toBeNull();
    const afterEnd = await readAll((await context.resumeExistingStream(chatId))!);
    expect(afterEnd.map((chunk) => chunk.type)).toEqual(chunks.map((chunk) => chunk.type));
    // Past `replayEndedWithinMs` (5 minutes, store clock) there is nothing to resume.
    await clock.advance(300_001);
    expect(await context.resumeExistingStream(chatId)).toBeNull();
    expect(await context.hasExistingStream(chatId)).toBeNull();
    const chat = await loadChat(store, chatId);
    expect(chat).toHaveLength(2);
    expect(chat[1]).toStrictEqual(await messageFromChunks(replayed, 'unused'));
    await validateUIMessages({ messages: chat });
  });

  it('another instance resumes while the first streams, and both streams end with the same answer', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(20));
    const gate = gated(chunks);
    const live = await context.resumableStream(chatId, () => gate.stream, {
      message: userMessage('q1', 'Hello'),
    });
    gate.release(5);
    const other = secondInstance();
    const elsewhere = await other.context.resumeExistingStream(chatId);
    expect(elsewhere).not.toBeNull();
    const [onFirst, onSecond] = await Promise.all([
      readAll(live),
      readAll(elsewhere!),
      (async () => gate.releaseAll())(),
    ]);
    expect(onSecond).toEqual(onFirst);
    expect(textOf(onSecond)).toBe(textOf(chunks));
    await context.settle();
    expect(await loadChat(other.store, chatId)).toStrictEqual(await loadChat(store, chatId));
  });

  it('onFinish: the answer is saved exactly once, also when the client disconnected at once', async () => {
    const chatId = newChat();
    const finished: Array<{ messages: UIMessage[]; responseMessage: UIMessage }> = [];
    const live = await context.resumableStream(
      chatId,
      () => chunkStream(scriptedAnswer(answerWords(30)), { delayMs: 1 }),
      {
        message: userMessage('q1', 'Tell me something long'),
        onFinish: ({ messages, responseMessage }) => {
          finished.push({ messages, responseMessage });
        },
      },
    );
    await live.cancel();
    await context.settle();
    expect(finished).toHaveLength(1);
    const chat = await loadChat(backend.open(), chatId);
    expect(chat).toStrictEqual(finished[0]!.messages);
    expect(chat.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(JSON.parse(JSON.stringify(finished[0]!.responseMessage))).toStrictEqual(chat[1]);
    const [runId] = await store.listRuns(sessionIdOfChat(chatId));
    const journal = await store.readJournal(sessionIdOfChat(chatId), runId!);
    expect(journal.records.filter((record) => record.type === 'done')).toHaveLength(1);
  });

  it('E6: stop mid-stream keeps the partial answer under a cancelled marker; the model is stopped', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(40));
    const gate = gated(chunks);
    let modelSignal: AbortSignal | undefined;
    const live = await context.resumableStream(
      chatId,
      ({ abortSignal }) => {
        modelSignal = abortSignal;
        return gate.stream;
      },
      { message: userMessage('q1', 'Write an essay') },
    );
    gate.release(20);
    const reader = live.getReader();
    const seen: UIMessageChunk[] = [];
    while (seen.length < 20) seen.push((await reader.read()).value!);
    const outcome = await context.stopStream(chatId);
    expect(outcome.cancelled).toBe(true);
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      seen.push(next.value);
    }
    // The stream ends by itself: the open text part closed, the marker, finish.
    expect(seen.slice(20).map((chunk) => chunk.type)).toEqual([
      'text-end',
      MARKER_PART_TYPE,
      'finish',
    ]);
    expect(seen.find(isMarker)).toMatchObject({
      data: { type: 'cancelled', wording: 'cancelled' },
    });
    expect(modelSignal?.aborted).toBe(true);
    expect(gate.cancelled).toBe(true);
    await context.settle();
    // After a reload: the same partial answer and marker, valid for the AI SDK.
    const chat = await loadChat(backend.open(), chatId);
    expect(chat).toHaveLength(2);
    expect(chat[1]).toStrictEqual(await messageFromChunks(seen, 'unused'));
    expect(chat[1]!.parts.at(-1)).toMatchObject({ type: MARKER_PART_TYPE });
    await validateUIMessages({ messages: chat, dataSchemas });
    // The chat takes the next message.
    const next = await context.resumableStream(chatId, () => chunkStream(scriptedAnswer(['ok'])), {
      message: userMessage('q2', 'Shorter, please'),
    });
    await readAll(next);
    await context.settle();
    expect((await loadChat(store, chatId)).map((message) => message.id)).toEqual([
      'q1',
      chat[1]!.id,
      'q2',
      expect.any(String),
    ]);
  });

  it('E6: a stop from another instance ends the answer where it was; the producer stops at its next chunk', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(30));
    const gate = gated(chunks);
    const live = await context.resumableStream(chatId, () => gate.stream, {
      message: userMessage('q1', 'Hi'),
    });
    gate.release(18);
    const seen = await readUntil(live, (_, all) => all.length === 18);
    const other = secondInstance();
    expect((await other.context.stopStream(chatId)).cancelled).toBe(true);
    gate.release(1);
    await context.settle();
    expect(gate.handedOut).toBeLessThanOrEqual(19);
    const chat = await loadChat(store, chatId);
    const answer = chat[1]!;
    expect(answer.parts.at(-1)).toMatchObject({ data: { type: 'cancelled' } });
    // Exactly the chunks journaled before the stop: the 18 seen (the 19th was refused).
    const expected = await messageFromChunks([...seen, { type: 'text-end', id: 't1' }], 'unused');
    expect(answer.parts.slice(0, -1)).toStrictEqual(expected.parts);
  });

  it('F1: a producer that stops making progress is recovered by another instance: the stream ends with the partial answer and a marker', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(30));
    const gate = gated(chunks);
    const live = await context.resumableStream(chatId, () => gate.stream, {
      message: userMessage('q1', 'Hi'),
    });
    gate.release(17);
    const seen = await readUntil(live, (_, all) => all.length === 17);
    // The producer hangs (never released). Until a grace has passed it may only be slow: the
    // other instance follows its answer.
    const other = secondInstance();
    const resumed = await other.context.resumeExistingStream(chatId);
    expect(resumed).not.toBeNull();
    const reading = readAll(resumed!);
    // A grace without a sign of life: to the other instance it is as good as dead, and its
    // reader's next load of the chat recovers the turn.
    const recovery = nextEvent(other.store, (event) => event.type === 'recovery');
    await clock.advance(GRACE_MS);
    expect(await recovery).toMatchObject({
      sessionId: sessionIdOfChat(chatId),
      outcome: 'recovered',
    });
    const replayed = await reading;
    expect(replayed.slice(0, 17)).toEqual(seen);
    expect(replayed.slice(17).map((chunk) => chunk.type)).toEqual([
      'text-end',
      MARKER_PART_TYPE,
      'finish',
    ]);
    expect(replayed.find(isMarker)).toMatchObject({
      data: { type: 'interrupted', wording: 'recovered' },
    });
    const chat = await loadChat(other.store, chatId);
    expect(chat[1]).toStrictEqual(await messageFromChunks(replayed, 'unused'));
    await validateUIMessages({ messages: chat, dataSchemas });
    // The stalled producer lost its turn (D4): released, it stops at once.
    gate.releaseAll();
    await context.settle();
    expect(gate.handedOut).toBeLessThan(chunks.length);
  });

  it('F1, F2, D4: a run that died before its first chunk ends its stream at the repair, with the marker the chat then shows', async () => {
    const chatId = newChat();
    const sessionId = sessionIdOfChat(chatId);
    await store.create({ id: sessionId });
    // A producer that began the run (the question is stored, E1) and died at once.
    const { runId } = await store.beginRun(sessionId, {
      userMessage: { role: 'user', content: [{ type: 'text', text: 'Hi' }], aiSdk: { id: 'q1' } },
    });
    const other = secondInstance();
    const resumed = await other.context.resumeExistingStream(chatId);
    expect(resumed).not.toBeNull();
    const reading = readAll(resumed!);
    // A grace later a load repairs the turn. It seals the run's journal with its crash
    // record, creating it (F1, D4: a producer that was only slow is refused at its first
    // chunk), so the stream ends at once, with the marker the chat holds: the output may
    // still show (F2: a journal late to arrive)...
    const recovery = nextEvent(other.store, (event) => event.type === 'recovery');
    await clock.advance(GRACE_MS);
    expect(await recovery).toMatchObject({ runId, outcome: 'pending-retry' });
    const replayed = await reading;
    expect(replayed.map((chunk) => chunk.type)).toEqual(['start', MARKER_PART_TYPE, 'finish']);
    expect(replayed[1]).toMatchObject({ data: { type: 'interrupted', wording: 'pending-retry' } });
    const chat = await loadChat(other.store, chatId);
    expect(chat.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(chat[1]).toStrictEqual(await messageFromChunks(replayed, 'unused'));
    // ...until a load one more grace later makes the marker final (F2).
    await clock.advance(GRACE_MS);
    const settled = await loadChat(other.store, chatId);
    expect(settled[1]?.parts).toContainEqual(
      expect.objectContaining({ data: expect.objectContaining({ wording: 'neutral' }) }),
    );
  });

  it('a retried request resumes the answer it started; another message meanwhile is busy (E7); regenerate answers again', async () => {
    const chatId = newChat();
    const gate = gated(scriptedAnswer(answerWords(5)));
    let made = 0;
    const makeStream = () => {
      made++;
      return gate.stream;
    };
    const first = await context.resumableStream(chatId, makeStream, {
      message: userMessage('q1', 'Hi'),
    });
    const retried = await context.resumableStream(chatId, makeStream, {
      message: userMessage('q1', 'Hi'),
    });
    const busy = await context
      .resumableStream(chatId, makeStream, { message: userMessage('q2', 'Other') })
      .catch((error) => error);
    expect(SessionBusyError.isInstance(busy)).toBe(true);
    gate.releaseAll();
    const [one, two] = await Promise.all([readAll(first), readAll(retried)]);
    expect(two).toEqual(one);
    await context.settle();
    expect(made).toBe(1);

    const again = await context
      .resumableStream(chatId, () => chunkStream(scriptedAnswer(['again'])), {
        message: userMessage('q1', 'Hi'),
      })
      .catch((error) => error);
    expect(InvalidInputError.isInstance(again)).toBe(true);
    const regenerated = await context.resumableStream(
      chatId,
      () => chunkStream(scriptedAnswer(['again'])),
      { message: userMessage('q1', 'Hi'), trigger: 'regenerate-message' },
    );
    await readAll(regenerated);
    await context.settle();
    const chat = await loadChat(store, chatId);
    expect(chat).toHaveLength(2);
    expect(chat[1]!.parts.at(-1)).toMatchObject({ type: 'text', text: 'again' });
  });

  it('an error chunk or a throwing model ends the answer under an errored marker; the question stays', async () => {
    const errors: unknown[] = [];
    const failing = createResumableStreamContext({
      store,
      graceMs: GRACE_MS,
      onError: (error) => errors.push(error),
    });
    const chatId = newChat();
    const chunks: UIMessageChunk[] = [
      { type: 'start' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Partial' },
      { type: 'error', errorText: 'The provider is overloaded.' },
    ];
    const replayed = await readAll(
      await failing.resumableStream(chatId, () => chunkStream(chunks), {
        message: userMessage('q1', 'Hi'),
      }),
    );
    expect(replayed.find(isMarker)).toMatchObject({
      data: { type: 'errored', text: 'The run failed. The provider is overloaded.' },
    });
    const throwing = newChat();
    const thrown = await readAll(
      await failing.resumableStream(
        throwing,
        () =>
          new ReadableStream<UIMessageChunk>({
            start(controller) {
              controller.enqueue({ type: 'start' });
              controller.error(new Error('socket hang up (secret-host:443)'));
            },
          }),
        { message: userMessage('q1', 'Hi') },
      ),
    );
    expect(thrown.find(isMarker)).toMatchObject({
      data: { type: 'errored', text: 'The run failed. The model stream failed.' },
    });
    await failing.settle();
    failing.close();
    expect(errors).toHaveLength(1);
    const chat = await loadChat(store, throwing);
    expect(chat.map((message) => message.role)).toEqual(['user', 'assistant']);
    await validateUIMessages({ messages: chat, dataSchemas });
  });
  /** The chat's messages as `role:id:text` lines, the marker as `[marker type]`. */
  const transcriptOf = async (chatStore: SessionStore, chatId: string) =>
    (await loadChat(chatStore, chatId)).map(
      (message) =>
        `${message.role}:${message.id}:${message.parts
          .map((part) =>
            part.type === 'text'
              ? part.text
              : part.type === MARKER_PART_TYPE
                ? `[${(part as { data: { type: string } }).data.type}]`
                : '',
          )
          .join('')}`,
    );
  const answerOf = (text: string) => () => chunkStream(scriptedAnswer([text]));

  it("B5, E7: a regenerate that loses the race to another instance's message keeps the question and its answer", async () => {
    const chatId = newChat();
    await readAll(
      await context.resumableStream(chatId, answerOf('first'), {
        message: userMessage('q1', 'Hi'),
      }),
    );
    await context.settle();
    const before = await transcriptOf(store, chatId);
    expect(before).toHaveLength(2);
    const other = secondInstance();
    const instance = backend.open();
    const regenerating = createResumableStreamContext({ store: instance, graceMs: GRACE_MS });
    // Fault injection (an interleaving): another instance's message begins its answer just
    // before this regenerate's run would.
    const gate = gated(scriptedAnswer(['second']));
    let otherStream: ReadableStream<UIMessageChunk> | undefined;
    const beginRun = instance.beginRun.bind(instance);
    instance.beginRun = async (...args) => {
      otherStream = await other.context.resumableStream(chatId, () => gate.stream, {
        message: userMessage('q2', 'Something else'),
      });
      return beginRun(...args);
    };
    const refused = await regenerating
      .resumableStream(chatId, answerOf('again'), {
        message: userMessage('q1', 'Hi'),
        trigger: 'regenerate-message',
      })
      .catch((error: unknown) => error);
    gate.releaseAll();
    await readAll(otherStream!);
    await other.context.settle();
    // The other answer claimed the chat first (E7): this regenerate is busy, and dropped nothing.
    expect(SessionBusyError.isInstance(refused)).toBe(true);
    const after = await transcriptOf(backend.open(), chatId);
    expect(after.slice(0, 2)).toEqual(before);
    expect(after.slice(2)).toEqual([
      'user:q2:Something else',
      expect.stringMatching(/^assistant:.*:second$/),
    ]);
    regenerating.close();
  });

  it('B5: a regenerate whose run cannot begin (a backend error) keeps the question and its answer', async () => {
    const chatId = newChat();
    await readAll(
      await context.resumableStream(chatId, answerOf('first'), {
        message: userMessage('q1', 'Hi'),
      }),
    );
    await context.settle();
    const before = await transcriptOf(store, chatId);
    const instance = backend.open();
    const regenerating = createResumableStreamContext({ store: instance, graceMs: GRACE_MS });
    // Fault injection: the backend is down when the run begins.
    instance.beginRun = async () => {
      throw new BackendUnavailableError('injected', 'the backend is down');
    };
    const failed = await regenerating
      .resumableStream(chatId, answerOf('again'), {
        message: userMessage('q1', 'Hi'),
        trigger: 'regenerate-message',
      })
      .catch((error: unknown) => error);
    expect(BackendUnavailableError.isInstance(failed)).toBe(true);
    expect(await transcriptOf(backend.open(), chatId)).toEqual(before);
    regenerating.close();
  });

  it('E5: saveChat while an answer streams leaves the answer to its run: it completes once and onFinish runs', async () => {
    const chatId = newChat();
    const chunks = scriptedAnswer(answerWords(6));
    const gate = gated(chunks);
    const finished: UIMessage[][] = [];
    const live = await context.resumableStream(chatId, () => gate.stream, {
      message: userMessage('q1', 'Hi'),
      onFinish: ({ messages }) => {
        finished.push(messages);
      },
    });
    gate.release(16);
    const seen = await readUntil(live, (_, all) => all.length === 16);
    // What the page holds mid-answer (useChat's messages), saved as an app would save it;
    // then the finished answer as toUIMessageStream's onFinish gives it (no id yet).
    const partial = await messageFromChunks(seen, 'unused');
    await saveChat(store, chatId, [userMessage('q1', 'Hi'), partial]);
    await saveChat(store, chatId, [
      userMessage('q1', 'Hi'),
      { ...(await messageFromChunks(chunks, 'unused')), id: '' },
    ]);
    gate.releaseAll();
    const replayed = await readAll((await context.resumeExistingStream(chatId))!);
    await context.settle();
    expect(replayed.find(isMarker)).toBeUndefined();
    expect(finished).toHaveLength(1);
    const chat = await loadChat(backend.open(), chatId);
    expect(chat).toStrictEqual(finished[0]);
    expect(chat.map((message) => message.id)).toEqual(['q1', partial.id]);
    expect(chat[1]).toStrictEqual(await messageFromChunks(replayed, 'unused'));
    expect(replayed.map((chunk) => chunk.type)).toEqual(chunks.map((chunk) => chunk.type));
    // Once the answer is stored, the page's copy of it is a save like any other.
    await saveChat(store, chatId, chat);
    expect(await loadChat(store, chatId)).toStrictEqual(chat);
  });

  it('a throwing onError is reported on the console and never keeps a run from ending', async () => {
    const consoleError = vi.spyOn(console, 'error');
    const throwingContext = createResumableStreamContext({
      store,
      graceMs: GRACE_MS,
      onError: () => {
        throw new Error('the error reporter is down');
      },
    });
    try {
      const throwingMaker = newChat();
      const makerStream = await throwingContext.resumableStream(
        throwingMaker,
        () => {
          throw new Error('provider 500');
        },
        { message: userMessage('q1', 'Hi') },
      );
      const throwingModel = newChat();
      const modelStream = await throwingContext.resumableStream(
        throwingModel,
        () =>
          new ReadableStream<UIMessageChunk>({
            start(controller) {
              controller.enqueue({ type: 'start' });
              controller.error(new Error('socket hang up'));
            },
          }),
        { message: userMessage('q1', 'Hi') },
      );
      const throwingFinish = newChat();
      const finishStream = await throwingContext.resumableStream(throwingFinish, answerOf('done'), {
        message: userMessage('q1', 'Hi'),
        onFinish: () => {
          throw new Error('onFinish failed');
        },
      });
      const [maker, model] = await Promise.all([
        readAll(makerStream),
        readAll(modelStream),
        readAll(finishStream),
      ]);
      await throwingContext.settle();
      expect(maker.find(isMarker)).toMatchObject({ data: { type: 'errored' } });
      expect(model.find(isMarker)).toMatchObject({ data: { type: 'errored' } });
      for (const chatId of [throwingMaker, throwingModel, throwingFinish]) {
        // Ended: the chat waits for no answer (E9's replay of an ended one aside).
        const session = await store.load(sessionIdOfChat(chatId), { refresh: true });
        expect(session.pending).toBeNull();
      }
      expect((await transcriptOf(store, throwingFinish)).at(-1)).toMatch(/:done$/);
      const reported = consoleError.mock.calls.flat().filter((value) => value instanceof Error);
      expect(reported.map((error) => (error as Error).message)).toEqual(
        expect.arrayContaining(['provider 500', 'socket hang up', 'onFinish failed']),
      );
    } finally {
      consoleError.mockRestore();
      throwingContext.close();
    }
  });
});
