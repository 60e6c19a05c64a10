import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../src/journal-format.js';
import { openAdapter, spawnFixture, tempDirectory } from './helpers.js';

const COUNT = 20;

const sequences = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

/**
 * Starts held-journal-child.ts: it appends 1..COUNT to s/r with `group` durability and keeps
 * the journal's lock for good, every append after the first durable in its log only
 * (FAULT INJECTION there: its bulk journal writes never finish). Resolves once all are
 * acknowledged.
 */
async function startHolder(directory: string): Promise<ChildProcessWithoutNullStreams> {
  const child = spawnFixture('held-journal-child.ts', [directory, `${COUNT}`]);
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk) => {
    errors += String(chunk);
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += String(chunk);
      if (output.includes(`appended ${COUNT}`)) resolve();
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`child ended with ${code ?? signal}: ${errors}`)),
    );
  });
  return child;
}

/** Until the waiting writer has left its wait mark next to the journal's lock. */
async function waitForWaitMark(lock: string): Promise<void> {
  for (;;) {
    try {
      await lstat(`${lock}.wait`);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

/** Until the journal's writer has let go of its lock (IDLE_MS after its last append). */
async function lockGone(lock: string): Promise<void> {
  for (;;) {
    try {
      await lstat(lock);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a takeover after a writer died holding the journal lock', () => {
  for (const variant of ['continues after', 'is refused inside'] as const) {
    it(`E2/F1: an append that waited for the lock ${variant} every append the dead writer acknowledged`, async () => {
      const directory = await tempDirectory();
      // Opened before the other process starts, so its own open() replays nothing.
      const survivor = await openAdapter({ directory });
      const child = await startHolder(directory);
      try {
        const journal = join(directory, 'journals', 's=');
        const file = join(journal, 'r=.journal');
        // Every acknowledged append after the first is only in the holder's log.
        expect(parseJournal(await readFile(file)).lastSequence).toBe(1);
        // What a caller learns of the journal, or (second variant) a stale view of it: the
        // file's own last sequence, as a caller that read only the file would believe.
        const sequence = variant === 'continues after' ? COUNT + 1 : 2;
        const appending = survivor.appendLog(
          's',
          'r',
          [{ sequence, text: JSON.stringify({ from: 'survivor' }) }],
          { durability: 'group' },
        );
        // The append is waiting for the live holder's lock: only now does the holder die.
        await waitForWaitMark(join(journal, 'r=.lock'));
        child.kill('SIGKILL');
        await once(child, 'exit');
        const result = await appending;
        if (variant === 'continues after') expect(result).toEqual({ ok: true });
        else expect(result).toEqual({ ok: false, lastSequence: COUNT });
        const read = await survivor.readLog('s', 'r', { afterSequence: 0, limit: 100 });
        const expected = variant === 'continues after' ? sequences(COUNT + 1) : sequences(COUNT);
        expect(read.records.map((record) => record.sequence)).toEqual(expected);
        // The dead writer's records are its own, in order; the survivor's comes after them.
        expect(read.records.slice(0, COUNT).map((record) => record.text)).toEqual(
          sequences(COUNT).map((at) => JSON.stringify({ sequence: at })),
        );
        if (variant === 'continues after') {
          expect(read.records[COUNT]?.text).toBe(JSON.stringify({ from: 'survivor' }));
        }
        await survivor.close();
        const inFile = parseJournal(await readFile(file));
        expect(
          inFile.batches.flatMap((batch) => batch.records.map((record) => record.sequence)),
        ).toEqual(expected);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
  }

  it("a dead process's log a replay leaves in place (no header yet) does not hold takeovers up", async () => {
    const directory = await tempDirectory();
    const adapter = await openAdapter({ directory });
    // The pid of a process that has ended: a log named for it is a dead process's.
    const ended = spawn(process.execPath, ['-e', '']);
    await once(ended, 'exit');
    // What a process that died creating its log leaves: a young file without a header,
    // which a replay keeps (HEADERLESS_GRACE_MS) and which holds no appends.
    const log = join(directory, 'wal', `${ended.pid}-0123456789abcdef-0.log`);
    await mkdir(join(directory, 'wal'), { recursive: true });
    await writeFile(log, new Uint8Array(64));
    for (let sequence = 1; sequence <= 3; sequence++) {
      const records = [{ sequence, text: '{}' }];
      expect(await adapter.appendLog('s', 'r', records, { durability: 'group' })).toEqual({
        ok: true,
      });
      // Let go after IDLE_MS without appends: each append after the first takes it over again.
      await lockGone(join(directory, 'journals', 's=', 'r=.lock'));
    }
    expect(await readdir(join(directory, 'wal'))).toContain(log.split('/').at(-1));
    await adapter.close();
  });
});
