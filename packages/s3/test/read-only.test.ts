import { createSessionStore, ReadOnlyError } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Adapter } from '../src/index.js';
import { openStore, type S3Fixture, startFixture, userMessage } from './helpers/s3-fixture.js';

let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

/** Every object under the prefix with its ETag and time, as a bucket listing shows it. */
async function listing(prefix: string): Promise<string[]> {
  const objects = await fixture.raw.listAll(`${prefix}/`, 'test listing');
  return objects.map((object) => `${object.key} ${object.etag} ${object.lastModified}`).sort();
}

describe('s3Adapter({ readOnly: true })', () => {
  it('sends GET, HEAD and LIST only: a damaged prefix lists the same, ETag for ETag, after a read-only store repaired it in memory; writes are ReadOnlyError', async () => {
    const options = fixture.options('read-only');
    const writer = openStore(options);
    for (const id of ['alpha', 'torn']) {
      const session = await writer.store.create({ id, title: id });
      session.messages.push(userMessage(`m-${id}`));
      await writer.store.save(session);
    }
    // Saved without its index entry: a writing listing would write the entry.
    const unindexed = await writer.store.create({ id: 'unindexed', title: 'unindexed' });
    unindexed.messages.push(userMessage('m-unindexed'));
    await writer.store.save(unindexed, { skipIndex: true });
    await writer.store.create({ id: 'crashed', title: 'died mid-answer' });
    const run = await writer.store.beginRun('crashed', {
      userMessage: { role: 'user', content: 'q' },
    });
    await run.append({ type: 'token', data: { text: 'partial answer' } });
    // Neither complete() nor cancel(): what a process killed mid-answer leaves behind.
    const torn = (await writer.adapter.getDocument('sessions', 'torn'))!;
    await writer.adapter.putDocument(
      'sessions',
      'torn',
      { kind: 'full', revision: torn.revision + 1, text: '{"messages": 5' },
      { expectedRevision: torn.revision, durable: true },
    );
    await writer.close();
    const before = await listing(options.prefix!);
    const from = fixture.faults.seen.length;

    const adapter = s3Adapter({ ...options, readOnly: true });
    const store = createSessionStore({ adapter, readOnly: true, recovery: { graceMs: 0 } });
    const listed = await store.list();
    expect(listed.sessions.map((session) => session.id).sort()).toEqual([
      'alpha',
      'crashed',
      // Its entry was written before the document was damaged; a load tells (A2).
      'torn',
      'unindexed',
    ]);
    const crashed = await store.load('crashed');
    expect(crashed.pending).toBeNull();
    expect(crashed.messages.map((message) => message.content)).toContain('partial answer');
    await expect(store.load('torn')).rejects.toThrow(/does not parse|corrupt/i);
    const error = await adapter
      .putDocument(
        'sessions',
        'new',
        { kind: 'full', revision: 1, text: '{}' },
        { expectedRevision: null, durable: true },
      )
      .then(
        () => null,
        (reason: unknown) => reason,
      );
    expect(ReadOnlyError.isInstance(error)).toBe(true);
    await expect(adapter.deleteLogs('crashed', { durable: true })).rejects.toSatisfy(
      ReadOnlyError.isInstance,
    );
    await store.close();

    const sent = new Set(fixture.faults.seen.slice(from).map((request) => request.command));
    expect([...sent].filter((command) => !/^(Get|Head|List)/.test(command))).toEqual([]);
    expect(await listing(options.prefix!)).toEqual(before);
  });
});
