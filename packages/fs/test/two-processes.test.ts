import { once } from 'node:events';
import { createSessionStore } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { spawnFixture, tempDirectory } from './helpers.js';

/**
 * B4 across processes: two processes make 200 read-modify-write saves each on one session
 * (test/fixtures/rmw-child.ts). Lock file + revision check: every save either lands on the
 * latest revision or fails with a conflict and is retried, so the final transcript holds all
 * 400 messages, each once, each process's in its own order: no lost update.
 */
const SAVES = 200;

async function runChild(directory: string, label: string, start: Promise<void>) {
  const child = spawnFixture('rmw-child.ts', [directory, 'shared', label, String(SAVES)]);
  let output = '';
  let errors = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  const exited = once(child, 'exit');
  await start;
  child.stdin.write('go\n');
  const [code] = (await exited) as [number | null];
  expect(errors).not.toContain('rmw child failed');
  expect(code).toBe(0);
  return JSON.parse(output) as { saves: number; conflicts: number };
}

describe('two processes, one directory', () => {
  it('B4: 2 processes × 200 read-modify-write saves of one session lose no update', async () => {
    const directory = await tempDirectory();
    const setup = createSessionStore({ adapter: fsAdapter({ directory }) });
    await setup.create({ id: 'shared', title: 'shared' }, { fsync: true });
    await setup.close();
    let release!: () => void;
    const start = new Promise<void>((resolve) => {
      release = resolve;
    });
    const children = [runChild(directory, 'left', start), runChild(directory, 'right', start)];
    release();
    const reports = await Promise.all(children);
    expect(reports.map((report) => report.saves)).toEqual([SAVES, SAVES]);
    const conflicts = reports.reduce((total, report) => total + report.conflicts, 0);
    console.info(`B4: ${conflicts} conflicts detected and retried across ${2 * SAVES} saves`);

    const check = createSessionStore({ adapter: fsAdapter({ directory }) });
    const session = await check.load('shared');
    const ids = session.messages.map((message) => message.id);
    expect(ids).toHaveLength(2 * SAVES);
    for (const label of ['left', 'right']) {
      const own = ids.filter((id) => id.startsWith(`${label}-`));
      expect(own).toEqual(Array.from({ length: SAVES }, (_, index) => `${label}-${index}`));
    }
    // Every message save and the final flushes (close) each made one revision, none lost.
    expect(session.revision).toBeGreaterThan(2 * SAVES);
    await check.close();
  }, 120_000);
});
