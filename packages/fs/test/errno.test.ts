import {
  BackendError,
  BackendUnavailableError,
  createSessionStore,
  type KeepsakeError,
  type SessionStore,
} from '@keepsake/core';
import { afterEach, describe, expect, it } from 'vitest';
import { ERRNO_TABLE, errnoClass } from '../src/errno-table.js';
import { toBackendError } from '../src/errors.js';
import { fsAdapter } from '../src/index.js';
import { resolveOptions } from '../src/options.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';

// Item 6 of issue 16: every errno is classified once (errno-table.ts, the README's table), and
// a typed error says honestly whether the same call may succeed if made again. Faults are
// injected into a simulated disk (FAULT INJECTION).

const stores: SessionStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0).reverse()) await store.close().catch(() => undefined);
});

function openStore(disk: FaultInjectingFileSystem, retrySharingViolations?: boolean): SessionStore {
  const adapter = fsAdapter({
    directory: '/store',
    fileSystem: disk,
    ...(retrySharingViolations === undefined ? {} : { retrySharingViolations }),
  });
  const store = createSessionStore({ adapter });
  stores.push(store);
  return store;
}

function failure(code: string): Error {
  return Object.assign(new Error(`${code}: injected`), { code });
}

async function rejection(promise: Promise<unknown>): Promise<KeepsakeError> {
  return promise.then(
    () => expect.fail('the call resolved'),
    (error: unknown) => error as KeepsakeError,
  );
}

describe('the errno table', () => {
  it('each class becomes one kind of typed error, retryable exactly when a retry may succeed', () => {
    for (const [code, entry] of Object.entries(ERRNO_TABLE)) {
      const error = toBackendError(failure(code), 'read /x');
      if (entry.class === 'unreachable') {
        expect(BackendUnavailableError.isInstance(error), code).toBe(true);
        expect(error.isRetryable, code).toBe(true);
        continue;
      }
      expect(BackendError.isInstance(error), code).toBe(true);
      expect(error.isRetryable, code).toBe(entry.class === 'transient');
      expect(error.cause, code).toMatchObject({ code });
    }
    for (const code of ['EIO', 'EAGAIN', 'EBUSY', 'EINTR', 'ESTALE', 'EMFILE']) {
      expect(errnoClass(code), code).toBe('transient');
    }
    expect(errnoClass('ENOSPC')).toBe('full');
    expect(toBackendError(failure('ENOSPC'), 'write /x').message).toMatch(/full or over quota/);
    // A code nobody listed, or none at all: not claimed to be retryable.
    expect(toBackendError(failure('EWHATEVER'), 'read /x').isRetryable).toBe(false);
    expect(toBackendError(new Error('no code'), 'read /x').isRetryable).toBe(false);
  });
});

describe('transient failures of reads are retryable', () => {
  for (const code of ['EIO', 'EAGAIN', 'EBUSY']) {
    it(`A2: ${code} reading the index in list() and reading a document in load() is a retryable BackendError; the retry succeeds`, async () => {
      const disk = faultInjectingFileSystem();
      const store = openStore(disk);
      await store.create({ id: 's', title: 'stored' }, { fsync: true });
      disk.inject({ operation: 'readFile', path: '/store/index/', code, times: 1 });
      const listing = await rejection(store.list());
      expect(BackendError.isInstance(listing)).toBe(true);
      expect(listing.isRetryable).toBe(true);
      expect((await store.list()).sessions.map((entry) => entry.id)).toEqual(['s']);

      const reader = openStore(disk);
      disk.inject({ operation: 'readFile', path: '/store/sessions/', code, times: 1 });
      const load = await rejection(reader.load('s'));
      expect(BackendError.isInstance(load)).toBe(true);
      expect(load.isRetryable).toBe(true);
      expect((await reader.load('s')).title).toBe('stored');
    });
  }

  it('A2: a server that cannot be reached (ETIMEDOUT) is BackendUnavailableError', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk);
    await store.create({ id: 's' }, { fsync: true });
    const reader = openStore(disk);
    disk.inject({ operation: 'readFile', path: '/store/sessions/', code: 'ETIMEDOUT', times: 1 });
    const error = await rejection(reader.load('s'));
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(error.isRetryable).toBe(true);
  });

  it('B2: a full disk and a permission error are not retryable', async () => {
    for (const code of ['ENOSPC', 'EACCES']) {
      const disk = faultInjectingFileSystem();
      const store = openStore(disk);
      disk.inject({ operation: 'write', path: '/store/sessions/', code, times: 1 });
      const error = await rejection(store.create({ id: 's' }, { fsync: true }));
      expect(BackendError.isInstance(error), code).toBe(true);
      expect(error.isRetryable, code).toBe(false);
    }
  });
});

describe('B2: the sharing-violation retry of renames is an option', () => {
  it('defaults to on on Windows only', () => {
    expect(resolveOptions({ directory: '/store' }).retrySharingViolations).toBe(
      process.platform === 'win32',
    );
  });

  it('on (an SMB share served by Windows): a rename refused a few times with EACCES or EBUSY still lands', async () => {
    for (const code of ['EACCES', 'EBUSY', 'EPERM']) {
      const disk = faultInjectingFileSystem();
      const store = openStore(disk, true);
      disk.inject({ operation: 'rename', path: '/store/sessions/', code, times: 2 });
      const created = await store.create({ id: 's', title: code }, { fsync: true });
      expect(created.revision, code).toBe(1);
      expect((await openStore(disk).load('s')).title, code).toBe(code);
    }
  });

  it('on: a violation that outlasts the retries is a retryable BackendError saying so', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk, true);
    disk.inject({ operation: 'rename', path: '/store/sessions/', code: 'EACCES' });
    const error = await rejection(store.create({ id: 's' }, { fsync: true }));
    expect(BackendError.isInstance(error)).toBe(true);
    expect(error.isRetryable).toBe(true);
    expect(error.message).toMatch(/sharing violation \(EACCES\) lasted through 5 attempts/);
  });

  it('off: EACCES on a rename is a permission error, not retried and not retryable', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk, false);
    await store.list(); // opened: the renames counted below are the create's alone
    disk.inject({ operation: 'rename', path: '/store/sessions/', code: 'EACCES', times: 1 });
    const renamesBefore = disk.counts.rename;
    const error = await rejection(store.create({ id: 's' }, { fsync: true }));
    expect(disk.counts.rename - renamesBefore).toBe(1);
    expect(error.isRetryable).toBe(false);
  });
});
