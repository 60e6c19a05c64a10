import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSessionStore } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { KeepsakeSession, pausedRunOf } from '@keepsake/openai-agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exampleDirectory = fileURLToPath(new URL('../', import.meta.url));

describe('the example, run as `pnpm start` runs it', () => {
  let directory: string;
  let output: string[];
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'keepsake-example-openai-agents-'));
    // Its main, in a process of its own (with the store in a directory the test then reads).
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', join(directory, 'data')],
      { cwd: exampleDirectory, encoding: 'utf8', timeout: 50_000 },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    output = result.stdout.trimEnd().split('\n');
  });
  afterAll(() => rm(directory, { recursive: true, force: true }));

  it('runs a turn, pauses for approval, saves the paused run and resumes it on a second store, streamed (B3, B4, E2)', () => {
    expect(output).toContain('[A] assistant: Done: sunny and 24°C in Lisbon. Anything else?');
    expect(output).toContain('[A] paused: book_flight {"to":"Lisbon","seats":2} needs approval');
    expect(output).toContain('[B] waiting for approval: book_flight {"to":"Lisbon","seats":2}');
    // The resumed run's text, delta by delta, from its journal, then its ending.
    expect(output).toContain('[B]   #3-#10 text "Done: booked 2 seats to Lisbon. Anything else?"');
    expect(output).toContain('[B]   end: completed');
    expect(output).toContain('[B] the run completed');
  });

  it('a client reconnecting to a third store reads the rest of the stream (E9); a second approval is refused (B4)', () => {
    const reconnect = output.find((line) => line.startsWith('[C] a client reconnecting'));
    expect(reconnect).toBe(
      '[C] a client reconnecting after event #5 reads "seats to Lisbon. Anything else?", then end: completed',
    );
    expect(output).toContain(
      '[C] a second approval of the same pause is refused: RunStateAlreadyResumedError',
    );
  });

  it('prints the history the directory holds, in order, each item once', async () => {
    const store = createSessionStore({
      adapter: fsAdapter({ directory: join(directory, 'data') }),
    });
    try {
      const session = new KeepsakeSession({ store, sessionId: 'trip-42' });
      const items = await session.getItems();
      const printed = output.slice(output.indexOf('history of trip-42 (8 items):') + 1);
      expect(printed).toEqual([
        '  1. user: What is the weather in Lisbon?',
        '  2. tool call: get_weather {"city":"Lisbon"}',
        '  3. tool result: sunny and 24°C in Lisbon',
        '  4. assistant: Done: sunny and 24°C in Lisbon. Anything else?',
        '  5. user: Please book a flight to Lisbon for two.',
        '  6. tool call: book_flight {"to":"Lisbon","seats":2}',
        '  7. tool result: booked 2 seats to Lisbon',
        '  8. assistant: Done: booked 2 seats to Lisbon. Anything else?',
      ]);
      expect(items).toHaveLength(printed.length);
      expect(items.map((item) => item.type ?? 'message')).toEqual([
        'message',
        'function_call',
        'function_call_result',
        'message',
        'message',
        'function_call',
        'function_call_result',
        'message',
      ]);
      expect(await pausedRunOf(session)).toMatchObject({ claimed: true, agentName: 'travel' });
    } finally {
      await store.close();
    }
  });

  it("prints what the READMEs (its own and the package's) show it prints", async () => {
    for (const readme of [
      new URL('../README.md', import.meta.url),
      new URL('../../../packages/openai-agents/README.md', import.meta.url),
    ]) {
      const text = await readFile(readme, 'utf8');
      const shown = /It prints \(after the directory it uses\):\n\n```text\n([\s\S]*?)```/.exec(
        text,
      );
      expect(shown?.[1]?.trimEnd().split('\n'), readme.pathname).toEqual(output.slice(1));
    }
    expect(output[0]).toBe(`store: fs, in ${join(directory, 'data')}`);
  });
});
