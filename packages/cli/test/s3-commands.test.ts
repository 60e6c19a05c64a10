import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDocumentError, createSessionStore } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import type { RedisTarget } from '@keepsake/redis/testing';
import { freePort, type S3Target } from '@keepsake/s3/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';
import { redisStoreUrl, startRedis, uniquePrefix } from './helpers/redis.js';
import { keepsake, tempDirectory } from './helpers/run-keepsake.js';
import { s3StoreAdapter, s3StoreUrl, startS3, uniqueS3Prefix } from './helpers/s3.js';
import { fillSampleStore, type SampleStore } from './helpers/sample-store.js';
import { bucketSnapshot } from './helpers/snapshots.js';
import { exited, spawnKeepsake } from './helpers/spawn-keepsake.js';
import { contentsOf, expectSameContents } from './helpers/store-contents.js';

let s3: S3Target;
let redis: RedisTarget;
let root: Awaited<ReturnType<typeof tempDirectory>>;
let store: string;
let sample: SampleStore;

beforeAll(async () => {
  [s3, redis, root] = await Promise.all([startS3(), startRedis(), tempDirectory('s3')]);
  const prefix = uniqueS3Prefix('main');
  sample = await fillSampleStore(s3StoreAdapter(s3, prefix), { sessions: 4 });
  store = s3StoreUrl(s3, prefix);
}, 120_000);

afterAll(async () => {
  await Promise.all([s3?.dispose(), redis?.dispose(), root?.remove()]);
});

describe('keepsake on S3', () => {
  it('ls, show and verify', async () => {
    const listed = await keepsake(['ls', store, '--all', '--json']);
    expect(listed.exitCode).toBe(EXIT_CODES.ok);
    const { sessions } = JSON.parse(listed.stdout) as { sessions: Array<{ id: string }> };
    expect(sessions.map((session) => session.id).sort()).toEqual([...sample.sessionIds].sort());
    const shown = await keepsake(['show', store, 'chat-0001']);
    expect(shown.exitCode).toBe(EXIT_CODES.ok);
    expect(shown.stdout).toMatch(/interrupted-by-user, 4 records, last sequence 4/);
    const crashed = await keepsake(['show', store, sample.crashedSessionId]);
    expect(crashed.stdout).toContain('journal   open, 1 record, last sequence 1');
    const verified = await keepsake(['verify', store]);
    expect(verified.stdout).toContain('ok: no problems');
    expect(verified.exitCode).toBe(EXIT_CODES.ok);
  });

  it('verify exits 9 and quarantine restore puts a repaired copy back', async () => {
    const prefix = uniqueS3Prefix('quarantine');
    await fillSampleStore(s3StoreAdapter(s3, prefix), { sessions: 2 });
    const url = s3StoreUrl(s3, prefix);
    const adapter = s3StoreAdapter(s3, prefix);
    await adapter.open();
    const current = (await adapter.getDocument('sessions', 'chat-0000'))!;
    await adapter.putDocument(
      'sessions',
      'chat-0000',
      { kind: 'full', revision: current.revision + 1, text: '{"half":' },
      { expectedRevision: current.revision, durable: false },
    );
    await adapter.close();
    const damaged = await keepsake(['verify', url]);
    expect(damaged.exitCode).toBe(EXIT_CODES.problemsFound);
    expect(damaged.stdout).toMatch(/problem\s+sessions\/chat-0000: does not parse/);

    const sessions = createSessionStore({ adapter: s3StoreAdapter(s3, prefix) });
    await expect(sessions.load('chat-0000')).rejects.toSatisfy(CorruptDocumentError.isInstance);
    await sessions.close();
    const listed = await keepsake(['quarantine', 'ls', url, '--json']);
    const { quarantined } = JSON.parse(listed.stdout) as {
      quarantined: Array<{ id: string; location: string }>;
    };
    expect(quarantined.map((entry) => entry.id)).toEqual(['chat-0000']);
    const file = join(root.path, 'repaired.json');
    await writeFile(file, JSON.stringify(JSON.parse(current.base)));
    const restored = await keepsake([
      'quarantine',
      'restore',
      url,
      quarantined[0]!.location,
      '--file',
      file,
    ]);
    expect(restored.exitCode).toBe(EXIT_CODES.ok);
    expect((await keepsake(['verify', url])).exitCode).toBe(EXIT_CODES.ok);
  });

  it('export and import round-trip through a file', async () => {
    const file = join(root.path, 's3-export.jsonl');
    expect((await keepsake(['export', store, '-o', file])).exitCode).toBe(EXIT_CODES.ok);
    const copy = uniqueS3Prefix('imported');
    expect((await keepsake(['import', file, '--to', s3StoreUrl(s3, copy)])).exitCode).toBe(
      EXIT_CODES.ok,
    );
    const original = await contentsOf(
      s3StoreAdapter(s3, store.split('/').slice(3).join('/').split('?')[0]!),
    );
    expectSameContents(await contentsOf(s3StoreAdapter(s3, copy)), original);
  });

  it('H3: fs → Redis → S3 → fs keeps every byte of every session, revision, lifecycle state and journal', async () => {
    const original = join(root.path, 'original');
    await fillSampleStore(fsAdapter({ directory: original }), { sessions: 5, tokensPerRun: 4 });
    const redisUrl = redisStoreUrl(redis, uniquePrefix('s3-round-trip'));
    const s3Prefix = uniqueS3Prefix('round-trip');
    const back = join(root.path, 'back');
    const hops = [
      [original, redisUrl],
      [redisUrl, s3StoreUrl(s3, s3Prefix)],
      [s3StoreUrl(s3, s3Prefix), back],
    ] as const;
    const checksums = [];
    for (const [from, to] of hops) {
      const result = await keepsake(['migrate', '--from', from, '--to', to, '-q']);
      expect(result.exitCode, `${from} → ${to}: ${result.stderr}`).toBe(EXIT_CODES.ok);
      checksums.push(/target checksum (\w+)/.exec(result.stdout)?.[1]);
    }
    expect(new Set(checksums).size).toBe(1);
    const before = await contentsOf(fsAdapter({ directory: original }));
    expectSameContents(await contentsOf(s3StoreAdapter(s3, s3Prefix)), before);
    expectSameContents(await contentsOf(fsAdapter({ directory: back })), before);
  });
});

describe('reading commands write nothing, and repair (S3)', () => {
  it('ls, show, verify, export and repair --dry-run leave every object as it was (ETags); repair does what --dry-run said', async () => {
    const prefix = uniqueS3Prefix('read-only');
    const filled = await fillSampleStore(s3StoreAdapter(s3, prefix), { sessions: 2 });
    const url = s3StoreUrl(s3, prefix);
    const adapter = s3StoreAdapter(s3, prefix);
    await adapter.open();
    const current = (await adapter.getDocument('sessions', 'chat-0001'))!;
    await adapter.putDocument(
      'sessions',
      'chat-0001',
      { kind: 'full', revision: current.revision + 1, text: '{"messages": 5' },
      { expectedRevision: current.revision, durable: false },
    );
    await adapter.close();
    const commands: Array<[string[], number]> = [
      [['ls', url], EXIT_CODES.ok],
      [['show', url, filled.crashedSessionId], EXIT_CODES.ok],
      [['verify', url], EXIT_CODES.problemsFound],
      [['export', url], EXIT_CODES.problemsFound],
      [['repair', url, '--dry-run', '--grace-ms', '0', '--json'], EXIT_CODES.problemsFound],
    ];
    let predicted = '';
    for (const [args, exitCode] of commands) {
      const before = await bucketSnapshot(s3, `${prefix}/`);
      const result = await keepsake(args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(exitCode);
      expect(await bucketSnapshot(s3, `${prefix}/`), args.join(' ')).toEqual(before);
      if (args[0] === 'repair') predicted = result.stdout;
      if (args[0] === 'ls') expect(result.stdout).toMatch(/^chat-0001\s.*UNREADABLE/m);
    }
    const repaired = await keepsake(['repair', url, '--grace-ms', '0', '--json']);
    expect(repaired.exitCode, repaired.stderr).toBe(EXIT_CODES.ok);
    const kinds = (text: string) =>
      (JSON.parse(text) as { actions: Array<{ kind: string; item: string }> }).actions
        .map((action) => `${action.kind} ${action.item}`)
        .sort();
    expect(kinds(repaired.stdout)).toEqual(kinds(predicted));
    expect(kinds(repaired.stdout)).toEqual([
      'quarantine sessions/chat-0001',
      `recover sessions/${filled.crashedSessionId}`,
    ]);
    const verified = await keepsake(['verify', url]);
    expect(verified.exitCode, verified.stdout).toBe(EXIT_CODES.ok);
  });
});

describe('keepsake migrate to S3, killed half-way', () => {
  it('H3: fs → S3 killed (SIGKILL) past 30% is refused without --resume and finished by it, nothing lost or doubled', async () => {
    const fsStore = join(root.path, 'kill-fs-s3');
    const prefix = uniqueS3Prefix('kill-fs-s3');
    const target = s3StoreUrl(s3, prefix);
    await fillSampleStore(fsAdapter({ directory: fsStore }), { sessions: 60, tokensPerRun: 10 });
    const before = await contentsOf(fsAdapter({ directory: fsStore }));

    const child = spawnKeepsake(['migrate', '--from', fsStore, '--to', target]);
    let progress = '';
    const killed = new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        progress += chunk.toString('utf8');
        // Plain progress lines (stderr is a pipe): kill at the first past 30%.
        const done = [...progress.matchAll(/^copy: (\d+)\/(\d+)\s/gm)].at(-1);
        if (done !== undefined && Number(done[1]) * 10 >= Number(done[2]) * 3 && child.pid) {
          process.kill(child.pid, 'SIGKILL');
          resolve();
        }
      });
    });
    const ended = await Promise.race([killed.then(() => exited(child)), exited(child)]);
    expect(ended.signal, `the child ended on its own:\n${progress}`).toBe('SIGKILL');

    const partial = await contentsOf(s3StoreAdapter(s3, prefix));
    expect(partial.documents.sessions.size).toBeGreaterThan(0);
    expect(partial.documents.sessions.size).toBeLessThan(before.documents.sessions.size);
    const refused = await keepsake(['migrate', '--from', fsStore, '--to', target]);
    expect(refused.exitCode).toBe(EXIT_CODES.targetNotEmpty);
    const resumed = await keepsake(['migrate', '--from', fsStore, '--to', target, '--resume']);
    expect(resumed.exitCode, resumed.stderr).toBe(EXIT_CODES.ok);
    expect(resumed.stdout).toMatch(/\d+ documents were already in place from an earlier run/);
    expect(resumed.stdout).not.toContain('mismatch');
    expectSameContents(await contentsOf(s3StoreAdapter(s3, prefix)), before);
    expect((await keepsake(['verify', target])).exitCode).toBe(EXIT_CODES.ok);
  });
});

describe('exit codes on S3', () => {
  it('6 with credentials the server does not know, 8 for a bucket that does not exist, 5 when nothing listens', async () => {
    const saved = process.env.AWS_SECRET_ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret';
    try {
      const refused = await keepsake(['ls', store]);
      expect(refused.exitCode, refused.stderr).toBe(EXIT_CODES.permission);
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = saved;
    }
    const noBucket = await keepsake([
      'ls',
      store.replace(`s3://${s3.bucket}/`, 's3://no-such-bucket/'),
    ]);
    expect(noBucket.exitCode, noBucket.stderr).toBe(EXIT_CODES.notFound);
    expect(noBucket.stderr).toContain('does not exist');
    const port = await freePort();
    const nowhere = await keepsake([
      'ls',
      `s3://keepsake-test/x?endpoint=http://127.0.0.1:${port}`,
    ]);
    expect(nowhere.exitCode, nowhere.stderr).toBe(EXIT_CODES.unreachable);
  });
});
