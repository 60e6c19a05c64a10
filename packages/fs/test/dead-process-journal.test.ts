import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../src/journal-format.js';
import { openAdapter, spawnFixture, tempDirectory } from './helpers.js';

const COUNT = 30;

/** Runs the child (a real process on the real filesystem) until its SIGKILL. */
async function appendThenDie(directory: string): Promise<void> {
  const child = spawnFixture('group-append-child.ts', [directory, `${COUNT}`]);
  let errors = '';
  child.stderr.on('data', (chunk) => {
    errors += String(chunk);
  });
  const [code, signal] = await once(child, 'exit');
  if (signal !== 'SIGKILL') throw new Error(`child ended with ${code ?? signal}: ${errors}`);
}

describe('a journal left by a process that died', () => {
  it('E2/F1: an adapter already running reads, and continues, every append the dead process acknowledged', async () => {
    const directory = await tempDirectory();
    // Opened before the other process starts, so its own open() replays nothing.
    const survivor = await openAdapter({ directory });
    await appendThenDie(directory);
    const journalFile = join(directory, 'journals', 's=', 'r=.journal');
    const inFile = parseJournal(await readFile(journalFile)).lastSequence;
    // Some acknowledged appends were only in the dead process's log: what this test is about.
    expect(inFile).toBeLessThan(COUNT);
    const read = await survivor.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    expect(read.records.map((record) => record.sequence)).toEqual(
      Array.from({ length: COUNT }, (_, index) => index + 1),
    );
    expect(parseJournal(await readFile(journalFile)).lastSequence).toBe(COUNT);
    const next = { sequence: COUNT + 1, text: '{}' };
    expect(await survivor.appendLog('s', 'r', [next], { durability: 'group' })).toEqual({
      ok: true,
    });
  });
});
