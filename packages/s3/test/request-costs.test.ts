import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3CapabilityError, s3Adapter } from '../src/index.js';
import { testClientConfig } from '../src/testing/index.js';
import { openStore, type S3Fixture, startFixture, userMessage } from './helpers/s3-fixture.js';

/**
 * What each operation costs in requests on a real RGW, counted by the test client's
 * middleware: one PUT per save once the ETag is known (no read before the write, the index
 * entry in the document's metadata), one PUT per journal append, what a listing costs, and
 * the probe's verdicts at open.
 */
let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

describe('request costs', () => {
  it('B4, B7: every save is one PUT, indexed or not; a listing elsewhere shows the last indexed save', async () => {
    const options = fixture.options('costs');
    const { store, close } = openStore(options);
    const session = await store.create({ title: 'created' }, { fsync: true });
    let indexedTitle = 'created';
    for (const [index, skipIndex] of [true, false, true, true, false, true].entries()) {
      session.messages.push(userMessage(`m${index}`));
      session.title = skipIndex ? `unindexed ${index}` : `indexed ${index}`;
      if (!skipIndex) indexedTitle = session.title;
      const from = fixture.faults.seen.length;
      await store.save(session, { fsync: true, skipIndex });
      const sent = fixture.faults.seen.slice(from);
      expect(
        sent.map((request) => request.command),
        `save ${index} (skipIndex ${skipIndex})`,
      ).toEqual(['PutObjectCommand']);
      expect(sent[0]?.key).toContain('/doc/sessions/');
      // Another process (no ETag cache, nothing in memory) lists the last indexed summary.
      const reader = openStore(options);
      const listed = (await reader.store.list({ limit: 10 })).sessions;
      expect(listed.map((entry) => [entry.id, entry.title])).toEqual([[session.id, indexedTitle]]);
      await reader.close();
    }
    await close();
  });

  it('B7: a listing after no save reads the entries it wrote: two LISTs and a GET per entry, no HEAD of its own', async () => {
    const options = fixture.options('list-costs');
    const { store, close } = openStore(options);
    for (const title of ['one', 'two', 'three']) await store.create({ title }, { fsync: true });
    const first = fixture.faults.seen.length;
    await store.list({ limit: 10 });
    const checked = fixture.faults.seen.slice(first).map((request) => request.command);
    // Three sessions saved since the last listing: a HEAD each (the summary their document
    // carries) and a PUT of its entry; core adds one HEAD per listed entry.
    expect(checked.filter((command) => command === 'ListObjectsV2Command')).toHaveLength(2);
    expect(checked.filter((command) => command === 'PutObjectCommand')).toHaveLength(3);
    const from = fixture.faults.seen.length;
    const titles = (await store.list({ limit: 10 })).sessions.map((entry) => entry.title);
    expect(titles).toEqual(['three', 'two', 'one']);
    const sent = fixture.faults.seen.slice(from).map((request) => request.command);
    expect(sent.filter((command) => command === 'ListObjectsV2Command')).toHaveLength(2);
    expect(sent.filter((command) => command === 'GetObjectCommand')).toHaveLength(3);
    expect(sent.filter((command) => command === 'PutObjectCommand')).toHaveLength(0);
    // The three HEADs are core's B7 check that each listed document exists.
    expect(sent.filter((command) => command === 'HeadObjectCommand')).toHaveLength(3);
    await close();
  });

  it('B7: a summary too long for S3 metadata is written as its own entry after the document', async () => {
    const options = fixture.options('long-title');
    const { store, close } = openStore(options);
    const session = await store.create({ title: 'short' }, { fsync: true });
    session.title = '💡'.repeat(1_000);
    const from = fixture.faults.seen.length;
    await store.save(session, { fsync: true });
    const sent = fixture.faults.seen.slice(from);
    expect(sent.map((request) => request.command)).toEqual([
      'PutObjectCommand',
      'PutObjectCommand',
    ]);
    expect(sent[0]?.key).toContain('/doc/sessions/');
    expect(sent[1]?.key).toContain('/index/');
    // A later save with skipIndex keeps it listed, as the last indexed save left it.
    session.title = 'unindexed';
    await store.save(session, { fsync: true, skipIndex: true });
    const reader = openStore(options);
    const listed = (await reader.store.list({ limit: 10 })).sessions;
    expect(listed.map((entry) => entry.title)).toEqual(['💡'.repeat(1_000)]);
    await reader.close();
    await close();
  });

  it('E2: a journal append is one PUT (and a HEAD beside it once the journal is known, B8)', async () => {
    const { store, close } = openStore(fixture.options('journal-costs'), {
      journal: { durability: 'each' },
    });
    const session = await store.create({ title: 'journal' }, { fsync: true });
    const run = await store.beginRun(session.id, { userMessage: userMessage('q') });
    await run.append({ type: 'token', data: { text: 'first' } });
    for (const text of ['a', 'b', 'c']) {
      const from = fixture.faults.seen.length;
      await run.append({ type: 'token', data: { text } });
      const sent = fixture.faults.seen.slice(from).map((request) => request.command);
      expect(sent.filter((command) => command === 'PutObjectCommand')).toHaveLength(1);
      expect(sent.filter((command) => command !== 'PutObjectCommand')).toEqual([
        'HeadObjectCommand',
      ]);
    }
    await run.complete();
    await close();
  });

  it('refuses Ceph RGW 16 without the compatibility option, naming it', async () => {
    if (fixture.target.compatibility !== 'ceph-rgw') return;
    const adapter = s3Adapter(fixture.options('quirk', { compatibility: 'standard' }));
    const error = await adapter.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(S3CapabilityError.is(error), String(error)).toBe(true);
    expect((error as S3CapabilityError).capability).toBe('if-match-quoted');
    expect((error as Error).message).toContain("compatibility: 'ceph-rgw'");
    await adapter.close();
  });

  it('refuses a missing bucket unless createBucket is set', async () => {
    const missing = s3Adapter(fixture.options('bucket', { bucket: 'no-such-bucket-here' }));
    const error = await missing.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(S3CapabilityError.is(error) && error.capability).toBe('bucket');
    expect((error as Error).message).toContain('createBucket');
    await missing.close();
    const created = s3Adapter(
      fixture.options('bucket', { bucket: 'created-by-open', createBucket: true }),
    );
    await created.open();
    await created.close();
  });
});

/**
 * FAULT INJECTION: a client whose requests lose their conditional headers on the way, as
 * an endpoint that ignores them would (some emulators do).
 */
function clientIgnoringConditions(): S3Client {
  const client = new S3Client(testClientConfig(fixture.target));
  client.middlewareStack.add(
    ((next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
      const headers = (args as { request?: { headers?: Record<string, string> } }).request?.headers;
      for (const name of Object.keys(headers ?? {})) {
        if (/^if-(none-)?match$/i.test(name)) delete headers![name];
      }
      return next(args);
    }) as never,
    { step: 'build', name: 'dropConditionalHeaders', priority: 'low' } as never,
  );
  return client;
}

describe('capability probe', () => {
  it('refuses an endpoint that ignores conditional writes, unless unsafeSingleWriter is set', async () => {
    const client = clientIgnoringConditions();
    const options = { ...fixture.options('unsafe'), client };
    const refused = s3Adapter(options);
    const error = await refused.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(S3CapabilityError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('unsafeSingleWriter');
    await refused.close();

    // Single writer: revisions are checked by this process, and B4 is declared as a gap.
    const { store, adapter, close } = openStore({ ...options, unsafeSingleWriter: true });
    expect(adapter.capabilities.gaps.map((gap) => gap.clause)).toEqual(['B4']);
    const session = await store.create({ title: 'one writer' }, { fsync: true });
    session.messages.push(userMessage('kept'));
    await store.save(session);
    // A write expecting an older revision is refused by the adapter's own check.
    const write = { kind: 'full' as const, revision: 2, text: '{"stale":true}' };
    expect(
      await adapter.putDocument('sessions', session.id, write, {
        expectedRevision: 1,
        durable: true,
      }),
    ).toEqual({ ok: false, currentRevision: 2 });
    expect(
      await adapter.putDocument('sessions', session.id, write, {
        expectedRevision: null,
        durable: true,
      }),
    ).toEqual({ ok: false, currentRevision: 2 });
    expect((await store.reload(session.id)).messages.map((message) => message.id)).toEqual([
      'kept',
    ]);
    await close();
    client.destroy();
  });
});
