import { appendFile, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeId, fsAdapter } from '@keepsake/fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';
import { keepsake, tempDirectory } from './helpers/run-keepsake.js';
import { fillSampleStore } from './helpers/sample-store.js';
import { treeSnapshot } from './helpers/snapshots.js';
import { runUntilKilled } from './helpers/spawn-keepsake.js';

let root: Awaited<ReturnType<typeof tempDirectory>>;

beforeAll(async () => {
  root = await tempDirectory('read-only');
});

afterAll(async () => {
  await root.remove();
});

/**
 * An fs store as an operator meets it after crashes: a run stopped mid-answer (the sample's),
 * two runs SIGKILLed mid-answer whose last appends are only in the dead process's
 * group-commit log (unreplayed), a session whose base fails its checksum, one whose deltas
 * end in a torn frame, a run record that is not JSON, no index, and an old temp file.
 */
async function damagedStore(name: string): Promise<string> {
  const path = join(root.path, name);
  await fillSampleStore(fsAdapter({ directory: path }), { sessions: 4 });
  await runUntilKilled('crashed-run-child.ts', [path, 'died-1,died-2', '40']);
  const base = join(path, 'sessions', encodeId('chat-0001'), 'document');
  const bytes = await readFile(base);
  bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 0xff;
  await writeFile(base, bytes);
  await appendFile(join(path, 'sessions', encodeId('chat-0002'), 'deltas'), 'torn');
  const runs = await readdir(join(path, 'runs'));
  await writeFile(join(path, 'runs', runs[0]!, 'document'), 'not a run record');
  await rm(join(path, 'index'), { recursive: true });
  const temp = join(path, 'sessions', encodeId('chat-0000'), 'document.123-0123456789ab-1.tmp');
  await writeFile(temp, 'left by a crash');
  await utimes(temp, new Date(0), new Date(0));
  return path;
}

describe('reading commands write nothing (fs)', () => {
  it('ls, show, verify, export, quarantine ls, migrate --from and repair --dry-run leave every file as it was', async () => {
    const store = await damagedStore('store');
    expect((await readdir(join(store, 'wal'))).length).toBeGreaterThan(0);
    const commands: Array<[string[], number]> = [
      [['ls', store], EXIT_CODES.ok],
      [['ls', store, '--all', '--json', '--limit', '2'], EXIT_CODES.ok],
      [['ls', store, '--rotated'], EXIT_CODES.ok],
      [['show', store, 'chat-crashed'], EXIT_CODES.ok],
      [['show', store, 'died-1', '--json'], EXIT_CODES.ok],
      [['show', store, 'chat-0001'], EXIT_CODES.problemsFound],
      [['show', store, 'no-such-session'], EXIT_CODES.notFound],
      [['verify', store], EXIT_CODES.problemsFound],
      [['verify', store, '--json'], EXIT_CODES.problemsFound],
      [['export', store], EXIT_CODES.problemsFound],
      [['export', store, '--output', join(root.path, 'export.jsonl')], EXIT_CODES.problemsFound],
      [['quarantine', 'ls', store], EXIT_CODES.ok],
      [['migrate', '--from', store, '--to', join(root.path, 'copy')], EXIT_CODES.problemsFound],
      [['repair', store, '--dry-run'], EXIT_CODES.problemsFound],
      [['repair', store, '--dry-run', '--json'], EXIT_CODES.problemsFound],
    ];
    const outputs = new Map<string, string>();
    for (const [args, exitCode] of commands) {
      const before = await treeSnapshot(store);
      const result = await keepsake(args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(exitCode);
      expect(await treeSnapshot(store), args.join(' ')).toEqual(before);
      outputs.set(args.join(' '), result.stdout);
    }
    // What they showed is the store as a replay and a load would find it, not as it lies.
    const listed = outputs.get(`ls ${store}`)!;
    // No index: listed from the documents, and the one that does not parse is named.
    expect(listed).toMatch(/^chat-0001\s+\?\s+\?\s+UNREADABLE\s+\(does not parse/m);
    expect(listed).toMatch(/^died-1\s.*\spending\s/m);
    const shown = JSON.parse(outputs.get(`show ${store} died-1 --json`)!) as {
      journals: Array<{ records: number }>;
    };
    expect(shown.journals[0]?.records).toBe(40);
    expect(outputs.get(`verify ${store}`)).toMatch(
      /problem\s+sessions\/chat-0001: does not parse: .*\(keepsake repair moves it to quarantine, A2\)/,
    );
    const dryRun = outputs.get(`repair ${store} --dry-run`)!;
    expect(dryRun).toMatch(/^would replay\s+journals: 1 group-commit log/m);
    expect(dryRun).toMatch(/^would recover\s+sessions\/chat-crashed: crashed turn repaired/m);
    expect(dryRun).toMatch(/^would recover\s+sessions\/died-2:/m);
    expect(dryRun).toMatch(/^would quarantine\s+sessions\/chat-0001: does not parse/m);
    expect(dryRun).toMatch(/^would quarantine\s+runs\/\S+: does not parse \(not JSON\)/m);
    expect(dryRun).toMatch(
      /^would index\s+index: rebuilt from 6 readable sessions: there is none/m,
    );
    expect(dryRun).toContain('dry run: nothing was written');
  });
});

describe('keepsake repair (fs)', () => {
  it('does what --dry-run said: replays the logs, repairs crashed turns, quarantines what does not parse, rebuilds the index; verify then passes', async () => {
    const store = await damagedStore('repaired');
    const predicted = JSON.parse(
      (await keepsake(['repair', store, '--dry-run', '--json'])).stdout,
    ) as {
      actions: Array<{ kind: string; item: string }>;
    };
    const result = await keepsake(['repair', store, '--json']);
    expect(result.exitCode, result.stderr).toBe(EXIT_CODES.ok);
    const done = JSON.parse(result.stdout) as {
      dryRun: boolean;
      sessions: number;
      actions: Array<{ kind: string; item: string }>;
    };
    expect(done.dryRun).toBe(false);
    expect(done.sessions).toBe(7);
    const kinds = (report: typeof done) =>
      report.actions.map((action) => `${action.kind} ${action.item}`).sort();
    expect(kinds(done)).toEqual(kinds(predicted as typeof done));
    expect(kinds(done)).toEqual(
      expect.arrayContaining([
        'quarantine sessions/chat-0001',
        'recover sessions/chat-crashed',
        'recover sessions/died-1',
        'recover sessions/died-2',
        'index index',
        'replay journals',
      ]),
    );
    // The logs are replayed and gone; the crashed turns end with the journals' output.
    expect(await readdir(join(store, 'wal'))).toEqual([]);
    const died = JSON.parse((await keepsake(['show', store, 'died-1', '--json'])).stdout) as {
      session: { pending: unknown; messages: Array<{ content: unknown }> };
      journals: Array<{ records: number; terminalState: string | null }>;
    };
    expect(died.session.pending).toBeNull();
    expect(JSON.stringify(died.session.messages)).toContain('t39');
    expect(died.journals[0]?.terminalState).toBe('interrupted-by-crash');
    const verified = await keepsake(['verify', store]);
    expect(verified.exitCode, verified.stdout).toBe(EXIT_CODES.ok);
    expect((await keepsake(['ls', store])).stdout).not.toContain('UNREADABLE');
    expect((await keepsake(['quarantine', 'ls', store])).stdout).toMatch(
      /sessions\/chat-0001\s+no\s/,
    );
    // Progress went to stderr, results to stdout; a second repair has nothing to do, and
    // writes nothing (not even a rewrite of the sessions it read).
    const before = await treeSnapshot(store);
    const progress = await keepsake(['repair', store]);
    expect(progress.exitCode).toBe(EXIT_CODES.ok);
    expect(progress.stderr).toContain('repair sessions');
    expect(progress.stdout).toMatch(/: nothing to repair \(6 sessions read/);
    expect(await treeSnapshot(store)).toEqual(before);
    expect((await keepsake(['repair', store, '--dry-run'])).exitCode).toBe(EXIT_CODES.ok);
  });

  it('exits 8 for a path that holds no store, creating nothing, and 2 for a bad --grace-ms', async () => {
    const missing = join(root.path, 'no-store');
    expect((await keepsake(['repair', missing])).exitCode).toBe(EXIT_CODES.notFound);
    expect((await keepsake(['repair', missing, '--dry-run'])).exitCode).toBe(EXIT_CODES.notFound);
    await expect(readdir(missing)).rejects.toThrow();
    expect((await keepsake(['repair', root.path, '--grace-ms', '-1'])).exitCode).toBe(
      EXIT_CODES.usage,
    );
  });
});
