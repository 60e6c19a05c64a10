import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogDurability } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../src/journal-format.js';
import { faultInjectingFileSystem, pausingFileSystem } from '../src/testing/index.js';
import { openAdapter, openSimulated, spawnFixture } from './helpers.js';

const record = (sequence: number) => ({ sequence, text: JSON.stringify({ sequence }) });
const sequences = (count: number) => Array.from({ length: count }, (_, index) => index + 1);
const JOURNAL = '/store/journals/s=/r=.journal';

describe('what a journal reader sees', () => {
  it.each(['group', 'each', 'none'] as const)(
    'E2/E5: a read whose file bytes were taken before the applier wrote and forgot the waiting frames still returns every resolved append (%s)',
    async (durability: LogDurability) => {
      const disk = faultInjectingFileSystem();
      const paused = pausingFileSystem(disk);
      const { adapter } = await openSimulated(disk, { fileSystem: paused.fileSystem });
      for (const sequence of sequences(10)) {
        expect(await adapter.appendLog('s', 'r', [record(sequence)], { durability })).toEqual({
          ok: true,
        });
      }
      const inFileBefore = parseJournal(disk.peek(JOURNAL) ?? new Uint8Array()).lastSequence;
      // With `group`, the appends after the first wait in memory (durable in the log).
      if (durability === 'group') expect(inFileBefore).toBeLessThan(10);
      const pause = paused.pauseAfter('readFile', '.journal');
      const reading = adapter.readLog('s', 'r', { afterSequence: 0, limit: 100 });
      await pause.reached;
      // The read holds the file as it was; now the waiting frames are written and forgotten.
      await adapter.sync();
      expect(parseJournal(disk.peek(JOURNAL) ?? new Uint8Array()).lastSequence).toBe(10);
      pause.resume();
      const read = await reading;
      expect(read.records.map((entry) => entry.sequence)).toEqual(sequences(10));
    },
  );
});

describe('what a reader through another adapter sees', () => {
  it("E2: appends waiting in the holder's memory, read from its group-commit log: across scan chunks, as the log grows, and for a journal first read late (fault injection)", async () => {
    const disk = faultInjectingFileSystem();
    const { adapter: holder } = await openSimulated(disk);
    // Another filesystem object: this adapter shares no memory with the holder, as another
    // process would not; it can only find the waiting frames in the holder's log.
    const { adapter: reader } = await openSimulated(disk, {
      fileSystem: pausingFileSystem(disk).fileSystem,
    });
    const text = (sequence: number, bytes: number) =>
      JSON.stringify({ sequence, pad: 'x'.repeat(bytes) });
    const appended = new Map<string, Array<{ sequence: number; text: string }>>();
    const append = async (runId: string, bytes: number) => {
      const records = appended.get(runId) ?? [];
      const next = { sequence: records.length + 1, text: text(records.length + 1, bytes) };
      const group = { durability: 'group' } as const;
      expect(await holder.appendLog('s', runId, [next], group)).toEqual({ ok: true });
      records.push(next);
      appended.set(runId, records);
    };
    const readAll = (runId: string) =>
      reader.readLog('s', runId, { afterSequence: 0, limit: 1000 });
    await append('one', 10);
    await append('two', 10);
    // From here on the journals' own files cannot be written: frames stay in memory and log.
    disk.inject({ operation: 'write', path: '.journal', code: 'EIO' });
    for (let index = 0; index < 8; index++) await append('one', 15_000);
    await append('one', 80_000); // one frame longer than a scan chunk
    await append('two', 10);
    expect((await readAll('one')).records).toEqual(appended.get('one'));
    for (let index = 0; index < 5; index++) await append('one', 100);
    await append('two', 10);
    // The log grew since the last read: the reader goes on from where it stopped.
    expect((await readAll('one')).records).toEqual(appended.get('one'));
    // First read of this journal: the part of the log already passed is read again for it.
    expect((await readAll('two')).records).toEqual(appended.get('two'));
    expect((await reader.readLog('s', 'one', { afterSequence: 9, limit: 3 })).records).toEqual(
      appended.get('one')?.slice(9, 12),
    );
    disk.clearFaults();
    await holder.close();
    expect((await readAll('one')).records).toEqual(appended.get('one'));
    expect((await readAll('two')).records).toEqual(appended.get('two'));
  });
});

describe('what a reader in another process sees', () => {
  it('E2: every append another process acknowledged, while that process still holds the journal and then once it is killed', async () => {
    const COUNT = 20;
    const reader = await openAdapter();
    const child = spawnFixture('held-journal-child.ts', [reader.directory, `${COUNT}`]);
    try {
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
        child.on('exit', (code) => reject(new Error(`child ended with ${code}: ${errors}`)));
      });
      const file = join(reader.directory, 'journals', 's=', 'r=.journal');
      // The writer's bulk writes never finish: every append after the first is in its log only.
      expect(parseJournal(await readFile(file)).lastSequence).toBe(1);
      const whileHeld = await reader.readLog('s', 'r', { afterSequence: 0, limit: 100 });
      expect(whileHeld.records.map((entry) => entry.sequence)).toEqual(sequences(COUNT));
      const later = await reader.readLog('s', 'r', { afterSequence: 15, limit: 3 });
      expect(later.records.map((entry) => entry.sequence)).toEqual([16, 17, 18]);
      child.kill('SIGKILL');
      await once(child, 'exit');
      const afterDeath = await reader.readLog('s', 'r', { afterSequence: 0, limit: 100 });
      expect(afterDeath.records.map((entry) => entry.sequence)).toEqual(sequences(COUNT));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
