import { createServer, type Socket } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { BackendUnavailableError, KeepsakeError, WriteOutcomeUnknownError } from '@keepsake/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { s3Adapter } from '../src/index.js';
import { testClientConfig } from '../src/testing/index.js';
import { type FaultEffect, FaultInjector } from './helpers/fault-middleware.js';
import { openStore, type S3Fixture, startFixture, userMessage } from './helpers/s3-fixture.js';

/**
 * FAULT INJECTION through SDK middleware on a real RGW: 500, 503, 409, a request that hangs
 * past its deadline, a connection reset before the request is sent and one after the server
 * applied it, at each request of a save and of a journal append. A fault that passes is
 * retried away; one that persists is a typed error; either way nothing is lost, stored
 * twice, reordered or half-written.
 */
let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});
afterEach(() => {
  fixture.faults.clear();
});

const EFFECTS: ReadonlyArray<[string, FaultEffect]> = [
  ['500 InternalError', { status: 500, name: 'InternalError' }],
  ['503 SlowDown', { status: 503, name: 'SlowDown' }],
  ['409 ConditionalRequestConflict', { status: 409, name: 'ConditionalRequestConflict' }],
  ['no reply within the deadline', { hangMs: 300 }],
  ['a reset before sending', 'reset-before'],
  ['a reset after the server applied it', 'reset-after'],
];

/** Which request of an operation fails: a command on keys under a part of the layout. */
const STEPS = {
  'the document PUT': { command: 'PutObjectCommand', part: '/doc/sessions/' },
  'the HEAD of a document whose ETag is not known': {
    command: 'HeadObjectCommand',
    part: '/doc/sessions/',
  },
  'the index entry PUT': { command: 'PutObjectCommand', part: '/index/' },
  'the segment PUT': { command: 'PutObjectCommand', part: '/journal/' },
  'the HEAD of the previous segment': { command: 'HeadObjectCommand', part: '/journal/' },
} as const;

function inject(step: keyof typeof STEPS, effect: FaultEffect, times: number) {
  const { command, part } = STEPS[step];
  return fixture.faults.add({ command, key: (key) => key.includes(part), effect, times });
}

const storeOptions = { requestTimeoutMs: 300 };

describe('saves under faults', () => {
  for (const [label, effect] of EFFECTS) {
    for (const step of [
      'the document PUT',
      'the HEAD of a document whose ETag is not known',
      'the index entry PUT',
    ] as const) {
      it(`B2, B4: ${label} once at ${step}: the save is retried and lands once`, async () => {
        const options = fixture.options('save-fault', storeOptions);
        const writer = openStore(options);
        const session = await writer.store.create({ title: 'faults' }, { fsync: true });
        // A second store saves next, so its adapter must HEAD for the ETag (no cached one).
        const other = openStore(options);
        const live = await other.store.load(session.id);
        live.messages.push(userMessage('one'));
        inject(step, effect, 1);
        await other.store.save(live, { fsync: true });
        const reader = openStore(options);
        const stored = await reader.store.load(session.id);
        expect(stored.messages.map((message) => message.id)).toEqual(['one']);
        expect(stored.revision).toBe(live.revision);
        const listed = await reader.store.list();
        expect(listed.sessions.map((entry) => entry.id)).toEqual([session.id]);
        for (const each of [writer, other, reader]) await each.close();
      });
    }
  }

  it('B2, B4: a PUT that landed but whose every reply and check failed rejects as an unknown outcome; the next save settles it, no conflict, nothing twice', async () => {
    const options = fixture.options('save-unknown', storeOptions);
    const { store, close } = openStore(options);
    const session = await store.create({ title: 'unknown' }, { fsync: true });
    session.messages.push(userMessage('one'));
    inject('the document PUT', 'reset-after', 100);
    inject(
      'the HEAD of a document whose ETag is not known',
      { status: 503, name: 'SlowDown' },
      100,
    );
    const error = await store.save(session, { fsync: true }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(WriteOutcomeUnknownError.isInstance(error), String(error)).toBe(true);
    fixture.faults.clear();
    session.messages.push(userMessage('two'));
    await store.save(session, { fsync: true });
    const reader = openStore(options);
    expect((await reader.store.load(session.id)).messages.map((message) => message.id)).toEqual([
      'one',
      'two',
    ]);
    await reader.close();
    await close();
  });

  it('B2: a 503 on every attempt rejects with a retryable typed error and leaves the store as it was', async () => {
    const options = fixture.options('save-down', storeOptions);
    const { store, close } = openStore(options);
    const session = await store.create({ title: 'down' }, { fsync: true });
    session.messages.push(userMessage('refused'));
    inject('the document PUT', { status: 503, name: 'SlowDown' }, 100);
    const error = await store.save(session, { fsync: true }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(KeepsakeError.isInstance(error) && error.isRetryable, String(error)).toBe(true);
    expect(
      BackendUnavailableError.isInstance(error) || WriteOutcomeUnknownError.isInstance(error),
    ).toBe(true);
    fixture.faults.clear();
    const reader = openStore(options);
    expect((await reader.store.load(session.id)).messages).toEqual([]);
    await reader.close();
    await close();
  });
});

describe('journal appends under faults', () => {
  for (const [label, effect] of EFFECTS) {
    for (const step of ['the segment PUT', 'the HEAD of the previous segment'] as const) {
      it(`E2: ${label} once at ${step}: every event is stored once, in order`, async () => {
        const options = fixture.options('append-fault', storeOptions);
        const { store, close } = openStore(options, { journal: { durability: 'each' } });
        const session = await store.create({ title: 'journal' }, { fsync: true });
        const run = await store.beginRun(session.id, { userMessage: userMessage('q') });
        const texts = ['a', 'b', 'c', 'd', 'e'];
        for (const [index, text] of texts.entries()) {
          if (index === 2) inject(step, effect, 1);
          await run.append({ type: 'token', data: { text } });
        }
        await run.complete();
        const reader = openStore(options);
        const journal = await reader.store.readJournal(session.id, run.runId);
        expect(
          journal.records.filter((entry) => entry.type === 'token').map((entry) => entry.data.text),
        ).toEqual(texts);
        expect(journal.gaps).toEqual([]);
        expect(journal.records.map((entry) => entry.sequence)).toEqual(
          journal.records.map((_entry, index) => index + 1),
        );
        await reader.close();
        await close();
      });
    }
  }

  it('E2, E3: a segment that landed but whose every reply and check failed is an unknown outcome; it is settled before the next append, stored once, in order', async () => {
    const options = fixture.options('append-unknown', storeOptions);
    const { store, close } = openStore(options, { journal: { durability: 'each' } });
    const session = await store.create({ title: 'journal' }, { fsync: true });
    const run = await store.beginRun(session.id, { userMessage: userMessage('q') });
    await run.append({ type: 'token', data: { text: 'a' } });
    inject('the segment PUT', 'reset-after', 100);
    inject('the HEAD of the previous segment', { status: 503, name: 'SlowDown' }, 100);
    const error = await run.append({ type: 'token', data: { text: 'b' } }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(WriteOutcomeUnknownError.isInstance(error), String(error)).toBe(true);
    fixture.faults.clear();
    await run.append({ type: 'token', data: { text: 'c' } });
    await run.complete();
    const reader = openStore(options);
    const journal = await reader.store.readJournal(session.id, run.runId);
    // The unknown append did land (the server applied it): once, before c, never twice.
    expect(
      journal.records.filter((entry) => entry.type === 'token').map((entry) => entry.data.text),
    ).toEqual(['a', 'b', 'c']);
    expect(journal.gaps).toEqual([]);
    await reader.close();
    await close();
  });
});

describe('opening under faults', () => {
  it("B2: the conditional-write probe's first PUT applied with its reply lost: the retry is refused as existing, and open goes on from the object it made", async () => {
    // A client of its own: the adapter probes an endpoint once per client, and the
    // fixture's client was probed by the tests before this one.
    const client = new S3Client(testClientConfig(fixture.target));
    const faults = new FaultInjector(client);
    try {
      faults.add({
        command: 'PutObjectCommand',
        key: (key) => key.includes('/probe/'),
        effect: 'reset-after',
        times: 1,
      });
      const opened = openStore({ ...fixture.options('probe-fault', storeOptions), client });
      const session = await opened.store.create({ title: 'opened' }, { fsync: true });
      expect((await opened.store.load(session.id)).title).toBe('opened');
      const probePuts = faults.seen.filter(
        (request) => request.command === 'PutObjectCommand' && request.key.includes('/probe/'),
      );
      // Create (twice: the reply of the first was lost), refused create, wrong If-Match,
      // right If-Match.
      expect(probePuts.length, 'the probe PUTs, the lost one sent again').toBe(5);
      await opened.close();
    } finally {
      client.destroy();
    }
  });
});

describe('a server that never answers', () => {
  it('every attempt is aborted at its deadline: open() rejects with a retryable typed error', async () => {
    const sockets = new Set<Socket>();
    const blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', () => resolve()));
    const { port } = blackHole.address() as { port: number };
    const adapter = s3Adapter({
      bucket: 'black-hole',
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      requestTimeoutMs: 200,
      retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
    });
    const error = await adapter.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect(sockets.size).toBeGreaterThan(0);
    await adapter.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => blackHole.close(() => resolve()));
  });
});
