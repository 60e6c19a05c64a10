/**
 * E5, F1: a run whose completed turn is stored but whose journal never got its `done`
 * record. `complete()` saves the turn, then seals the journal; a process killed between
 * the two left no pending turn, no marker and a journal without an ending, and every
 * follower (the server's event stream, a resumed AI SDK stream, `GET /api/runs/:id`)
 * waited on it forever (found with three server instances on Redis Cluster and SIGKILLs,
 * issue 35). The session is the truth: `closeAnsweredRun` ends such a run as completed
 * and seals its journal, once.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { captureError, contentsOf, userInput } from '../harness/fixtures.js';
import { NO_SECOND_PROCESS_NOTE } from '../harness/not-verified.js';
import type { SpecRegistrar } from '../harness/suite.js';

type Ending = 'journal' | 'messages';
const ENDINGS: readonly Ending[] = ['journal', 'messages'];

/** The compiled worker next to this file, or its source when the suite runs from src/. */
function workerScript(): string {
  const compiled = fileURLToPath(new URL('../harness/complete-then-die.js', import.meta.url));
  return existsSync(compiled)
    ? compiled
    : fileURLToPath(new URL('../harness/complete-then-die.ts', import.meta.url));
}

/** Runs the worker to its kill; resolves with the run id it printed. */
function completeThenDie(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [workerScript(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const line = output.split('\n').find((text) => text.startsWith('{"runId"'));
      if (signal !== 'SIGKILL' || line === undefined) {
        reject(
          new Error(`the worker did not die at its seal (exit ${code}, ${signal}): ${output}`),
        );
        return;
      }
      resolve((JSON.parse(line) as { runId: string }).runId);
    });
  });
}

/** What another instance finds, and what closeAnsweredRun makes of it. */
async function expectClosed(
  env: TestEnvironment,
  sessionId: string,
  runId: string,
  ending: Ending,
): Promise<void> {
  const reader: OpenedStore = await env.openStore();
  const before = await reader.store.runSummary(sessionId, runId);
  expect(before.terminalState, `${ending}: the journal never got its ending`).toBeNull();
  const stored = await reader.store.load(sessionId);
  expect(stored.pending, `${ending}: the turn is answered`).toBeNull();
  const transcript = contentsOf(stored);

  expect(await reader.store.closeAnsweredRun(sessionId, runId), ending).toBe('completed');
  const after = await reader.store.runSummary(sessionId, runId);
  expect(after).toMatchObject({ terminalState: 'completed', lastEventType: 'done' });
  expect(after.lastSequence).toBe(before.lastSequence + 1);
  // Once sealed, again changes nothing; another instance agrees.
  const other = await env.openStore();
  expect(await other.store.closeAnsweredRun(sessionId, runId)).toBe('completed');
  expect((await other.store.runSummary(sessionId, runId)).lastSequence).toBe(after.lastSequence);
  // The transcript is the one complete() saved: the answer once, no marker.
  const reloaded = await other.store.load(sessionId);
  expect(contentsOf(reloaded)).toEqual(transcript);
  expect(reloaded.messages.some((message) => message.marker !== undefined)).toBe(false);
  expect(contentsOf(reloaded).join('')).toContain('one two three');
}

export function defineAnsweredRunTests(suite: SpecRegistrar): void {
  suite.test(
    'E5',
    'a completed turn whose journal never got its done record (the process died between the save and the seal) ends its run: closeAnsweredRun seals the journal completed, once, and changes no transcript',
    async (env) => {
      for (const ending of ENDINGS) {
        const worker = await env.openStore({ journal: { durability: 'each' } });
        const session = await worker.store.create({ id: env.id() }, { fsync: true });
        const run = await worker.store.beginRun(session.id, { userMessage: userInput('q') });
        for (const text of ['one ', 'two ', 'three']) {
          await run.append({ type: 'token', data: { text } });
        }
        // FAULT INJECTION: the process dies where the journal's ending would be written.
        worker.adapter.inject({
          method: 'appendLog',
          match: ([, , records]) =>
            (records as { text: string }[]).some((record) => record.text.includes('"type":"done"')),
          error: () => {
            env.killProcess(worker);
            return new Error('FAULT INJECTION: the process died before the seal');
          },
        });
        await captureError(() =>
          ending === 'journal'
            ? run.complete()
            : run.complete({
                assistantMessages: [{ role: 'assistant', content: 'one two three' }],
              }),
        );
        await expectClosed(env, session.id, run.runId, ending);
      }
    },
  );

  suite.test(
    'E5',
    'closeAnsweredRun leaves a run alone while its turn is not answered: pending, live, or ended by a marker',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'partial' } });
      const other = await env.openStore();
      expect(await other.store.closeAnsweredRun(session.id, run.runId), 'pending').toBeNull();
      expect(await opened.store.closeAnsweredRun(session.id, run.runId), 'live here').toBeNull();
      await run.cancel();
      // Cancelled: the journal's own ending stands.
      expect(await other.store.closeAnsweredRun(session.id, run.runId)).toBe('interrupted-by-user');
      expect((await other.store.runSummary(session.id, run.runId)).lastEventType).toBe('cancel');
      // A run the session never had is not answered there.
      expect(await other.store.closeAnsweredRun(session.id, env.id('run'))).toBeNull();
    },
  );

  if (!suite.context.capabilities.sharedAcrossProcesses) return;
  suite.test(
    'E5',
    'real processes: a SIGKILL between complete()’s save and its seal leaves an answered turn whose run another instance closes as completed (F1)',
    async (env) => {
      const moduleFile = suite.context.initializer.initializerModule;
      if (moduleFile === undefined) {
        env.notVerifiedNote = NO_SECOND_PROCESS_NOTE;
        return;
      }
      for (const ending of ENDINGS) {
        const creator = await env.openStore();
        const session = await creator.store.create({ id: env.id() }, { fsync: true });
        const runId = await completeThenDie([moduleFile, env.namespace, session.id, ending]);
        await expectClosed(env, session.id, runId, ending);
      }
    },
  );
}
