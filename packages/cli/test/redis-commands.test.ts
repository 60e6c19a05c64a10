import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDocumentError, createSessionStore } from '@keepsake/core';
import { KeyLayout, redisAdapter } from '@keepsake/redis';
import { freePort, RedisServerProcess, type RedisTarget } from '@keepsake/redis/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';
import { openRedis, redisStoreUrl, startRedis, uniquePrefix } from './helpers/redis.js';
import { keepsake, tempDirectory } from './helpers/run-keepsake.js';
import { fillSampleStore, type SampleStore } from './helpers/sample-store.js';
import { keyspaceSnapshot } from './helpers/snapshots.js';
import { readStoreContents } from './helpers/store-contents.js';

let redis: RedisTarget;
let root: Awaited<ReturnType<typeof tempDirectory>>;
let store: string;
let prefix: string;
let sample: SampleStore;

async function sampleStore(
  label: string,
  sessions = 4,
): Promise<{ url: string; prefix: string; sample: SampleStore }> {
  const keyPrefix = uniquePrefix(label);
  const filled = await fillSampleStore(redisAdapter({ url: redis.url, keyPrefix }), { sessions });
  return { url: redisStoreUrl(redis, keyPrefix), prefix: keyPrefix, sample: filled };
}

beforeAll(async () => {
  redis = await startRedis();
  root = await tempDirectory('redis');
  ({ url: store, prefix, sample } = await sampleStore('main', 6));
});

afterAll(async () => {
  await redis?.dispose();
  await root?.remove();
});

describe('keepsake on Redis', () => {
  it('ls lists every session, page by page', async () => {
    const result = await keepsake(['ls', store, '--limit', '3', '--all', '--json']);
    expect(result.exitCode).toBe(EXIT_CODES.ok);
    const { sessions } = JSON.parse(result.stdout) as { sessions: Array<{ id: string }> };
    expect(sessions.map((session) => session.id).sort()).toEqual([...sample.sessionIds].sort());
    const text = await keepsake(['ls', store]);
    expect(text.stdout.split('\n')[1]).toMatch(/^chat-crashed\s.*pending/);
  });

  it('show prints the transcript, the pending turn and the journals', async () => {
    const result = await keepsake(['show', store, 'chat-0002']);
    expect(result.exitCode).toBe(EXIT_CODES.ok);
    expect(result.stdout).toContain('marker: errored (errored)');
    expect(result.stdout).toMatch(/errored, 4 records, last sequence 4/);
    const crashed = await keepsake(['show', store, sample.crashedSessionId]);
    expect(crashed.stdout).toContain('journal   open, 1 record, last sequence 1');
    expect((await keepsake(['show', store, 'nope'])).exitCode).toBe(EXIT_CODES.notFound);
  });

  it('verify passes a sound store and exits 9 on a damaged one', async () => {
    expect((await keepsake(['verify', store])).exitCode).toBe(EXIT_CODES.ok);
    const damaged = await sampleStore('damaged', 3);
    const adapter = await openRedis(redis, damaged.prefix);
    const current = (await adapter.getDocument('sessions', 'chat-0000'))!;
    await adapter.putDocument(
      'sessions',
      'chat-0000',
      { kind: 'full', revision: current.revision + 1, text: '[1,2' },
      { expectedRevision: current.revision, durable: false },
    );
    const [runId] = await adapter.listLogs('chat-0001');
    await adapter.appendLog(
      'chat-0001',
      runId!,
      [{ sequence: 5, text: JSON.stringify({ not: 'a record' }) }],
      { durability: 'none' },
    );
    await adapter.close();
    const result = await keepsake(['verify', damaged.url]);
    expect(result.exitCode).toBe(EXIT_CODES.problemsFound);
    expect(result.stdout).toMatch(/problem\s+sessions\/chat-0000: does not parse/);
    expect(result.stdout).toContain(`journal chat-0001/${runId}: record 5 is skipped by readers`);
    expect(result.stdout).toContain('entry "chat-0000" has no readable document');
  });

  it('quarantine ls shows a document a load moved aside, and restore puts a repaired copy back', async () => {
    const damaged = await sampleStore('quarantine', 2);
    const adapter = await openRedis(redis, damaged.prefix);
    const current = (await adapter.getDocument('sessions', 'chat-0001'))!;
    const original = JSON.parse(current.base) as Record<string, unknown>;
    await adapter.putDocument(
      'sessions',
      'chat-0001',
      { kind: 'full', revision: current.revision + 1, text: '{"oops"' },
      { expectedRevision: current.revision, durable: false },
    );
    const sessions = createSessionStore({ adapter });
    await expect(sessions.load('chat-0001')).rejects.toSatisfy(CorruptDocumentError.isInstance);
    await sessions.close();
    const listed = await keepsake(['quarantine', 'ls', damaged.url, '--json']);
    const { quarantined } = JSON.parse(listed.stdout) as {
      quarantined: Array<{ id: string; location: string; storedAgain: boolean }>;
    };
    expect(quarantined).toEqual([expect.objectContaining({ id: 'chat-0001', storedAgain: false })]);
    const file = join(root.path, 'repaired.json');
    await writeFile(file, JSON.stringify(original));
    const restored = await keepsake([
      'quarantine',
      'restore',
      damaged.url,
      quarantined[0]!.location,
      '--file',
      file,
    ]);
    expect(restored.exitCode).toBe(EXIT_CODES.ok);
    const shown = await keepsake(['show', damaged.url, 'chat-0001', '--json']);
    expect((JSON.parse(shown.stdout) as { session: { title: string } }).session.title).toBe(
      original.title,
    );
    expect((await keepsake(['verify', damaged.url])).exitCode).toBe(EXIT_CODES.ok);
  });

  it('export and import round-trip through a file, into another prefix', async () => {
    const file = join(root.path, 'redis-export.jsonl');
    expect((await keepsake(['export', store, '-o', file])).exitCode).toBe(EXIT_CODES.ok);
    const copyPrefix = uniquePrefix('imported');
    const imported = await keepsake(['import', file, '--to', redisStoreUrl(redis, copyPrefix)]);
    expect(imported.exitCode).toBe(EXIT_CODES.ok);
    const [source, copy] = [await openRedis(redis, prefix), await openRedis(redis, copyPrefix)];
    const [before, after] = [await readStoreContents(source), await readStoreContents(copy)];
    await Promise.all([source.close(), copy.close()]);
    expect(after.journals).toEqual(before.journals);
    expect([...after.documents.sessions.keys()].sort()).toEqual(
      [...before.documents.sessions.keys()].sort(),
    );
  });
});

describe('reading commands write nothing, and repair (Redis)', () => {
  it('ls, show, verify, export, quarantine ls, migrate --from and repair --dry-run leave every key as it was (DUMP); repair does what --dry-run said', async () => {
    const { url, prefix: keyPrefix, sample: filled } = await sampleStore('read-only', 3);
    const adapter = await openRedis(redis, keyPrefix);
    const current = (await adapter.getDocument('sessions', 'chat-0001'))!;
    await adapter.putDocument(
      'sessions',
      'chat-0001',
      { kind: 'full', revision: current.revision + 1, text: '{"messages": 5' },
      { expectedRevision: current.revision, durable: false },
    );
    const [runRecord] = (await adapter.listDocuments('runs', { cursor: null, limit: 1 })).ids;
    const record = (await adapter.getDocument('runs', runRecord!))!;
    await adapter.putDocument(
      'runs',
      runRecord!,
      { kind: 'full', revision: record.revision + 1, text: 'not a run record' },
      { expectedRevision: record.revision, durable: false },
    );
    await adapter.close();
    const client = new Redis(redis.url);
    await client.del(new KeyLayout(keyPrefix).index());
    client.disconnect();
    const commands: Array<[string[], number]> = [
      [['ls', url, '--all'], EXIT_CODES.ok],
      [['show', url, filled.crashedSessionId], EXIT_CODES.ok],
      [['show', url, 'chat-0001'], EXIT_CODES.problemsFound],
      [['verify', url, '--json'], EXIT_CODES.problemsFound],
      [['export', url], EXIT_CODES.problemsFound],
      [['quarantine', 'ls', url], EXIT_CODES.ok],
      [
        ['migrate', '--from', url, '--to', join(root.path, 'read-only-copy')],
        EXIT_CODES.problemsFound,
      ],
      [['repair', url, '--dry-run'], EXIT_CODES.problemsFound],
      [['repair', url, '--dry-run', '--grace-ms', '0', '--json'], EXIT_CODES.problemsFound],
    ];
    let predicted = '';
    for (const [args, exitCode] of commands) {
      const before = await keyspaceSnapshot(redis, keyPrefix);
      const result = await keepsake(args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(exitCode);
      expect(await keyspaceSnapshot(redis, keyPrefix), args.join(' ')).toEqual(before);
      if (args.includes('--json') && args[0] === 'repair') predicted = result.stdout;
      if (args[0] === 'ls') expect(result.stdout).toMatch(/^chat-0001\s.*UNREADABLE/m);
      if (args.join(' ') === `repair ${url} --dry-run`) {
        // F1: no liveness on Redis, and the run went quiet less than 30 s ago: it may be alive.
        expect(result.stdout).toMatch(
          new RegExp(
            `^left alone\\s+sessions/${filled.crashedSessionId}: run \\S+ may still be alive`,
            'm',
          ),
        );
      }
    }
    const repaired = await keepsake(['repair', url, '--grace-ms', '0', '--json']);
    expect(repaired.exitCode, repaired.stderr).toBe(EXIT_CODES.ok);
    const kinds = (text: string) =>
      (JSON.parse(text) as { actions: Array<{ kind: string; item: string }> }).actions
        .map((action) => `${action.kind} ${action.item}`)
        .sort();
    expect(kinds(repaired.stdout)).toEqual(kinds(predicted));
    expect(kinds(repaired.stdout)).toEqual([
      'index index',
      `quarantine runs/${runRecord}`,
      'quarantine sessions/chat-0001',
      `recover sessions/${filled.crashedSessionId}`,
    ]);
    const verified = await keepsake(['verify', url]);
    expect(verified.exitCode, verified.stdout).toBe(EXIT_CODES.ok);
    // Nothing left to repair: nothing is written, not even the sessions it read.
    const settled = await keyspaceSnapshot(redis, keyPrefix);
    expect((await keepsake(['repair', url])).stdout).toContain('nothing to repair');
    expect(await keyspaceSnapshot(redis, keyPrefix)).toEqual(settled);
  });
});

describe('exit codes on Redis', () => {
  it('5 when nothing listens at the address', async () => {
    const port = await freePort();
    const result = await keepsake(['ls', `redis://127.0.0.1:${port}`]);
    expect(result.exitCode).toBe(EXIT_CODES.unreachable);
    expect(result.stderr).toContain('ECONNREFUSED');
  });

  it('6 without the password, or with a wrong one; 7 for a target that cannot confirm durability', async () => {
    const locked = await RedisServerProcess.start({ args: ['--requirepass', 'sesame'] });
    const volatile = await RedisServerProcess.start({ persistence: 'none' });
    try {
      const anonymous = await keepsake(['ls', locked.url]);
      expect(anonymous.exitCode).toBe(EXIT_CODES.permission);
      expect(anonymous.stderr).toContain('NOAUTH');
      const wrong = await keepsake(['ls', `redis://:nope@127.0.0.1:${locked.port}`]);
      expect(wrong.exitCode).toBe(EXIT_CODES.permission);
      expect(wrong.stderr).toContain('WRONGPASS');
      expect(wrong.stderr).not.toContain('nope');
      const right = await keepsake(['ls', `redis://:sesame@127.0.0.1:${locked.port}`]);
      expect(right.exitCode).toBe(EXIT_CODES.ok);
      // A migration target must confirm its durability (B3): a server without AOF cannot.
      const unsafe = await keepsake(['migrate', '--from', store, '--to', volatile.url]);
      expect(unsafe.exitCode).toBe(EXIT_CODES.backendError);
      expect(unsafe.stderr).toContain('appendonly');
      const accepted = await keepsake([
        'migrate',
        '--from',
        store,
        '--to',
        `${volatile.url}?durability=none`,
        '-q',
      ]);
      expect(accepted.exitCode).toBe(EXIT_CODES.ok);
    } finally {
      await Promise.all([locked.dispose(), volatile.dispose()]);
    }
  });
});
