/**
 * H1, B4: an adapter that declares `sharedAcrossProcesses` is tried with a real second
 * process (issue 24: the claim used to be checked only by two stores in one process, so
 * an in-process cache or lock posing as shared storage passed).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RevisionConflictError } from '@keepsake/core';
import { expect } from 'vitest';
import { expectTypedError, textMessage } from '../harness/fixtures.js';
import { NO_SECOND_PROCESS_NOTE } from '../harness/not-verified.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** The compiled child script next to this file, or its source when the suite runs from src/. */
function secondProcessScript(): string {
  const compiled = fileURLToPath(new URL('../harness/second-process.js', import.meta.url));
  return existsSync(compiled)
    ? compiled
    : fileURLToPath(new URL('../harness/second-process.ts', import.meta.url));
}

function runSecondProcess(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [secondProcessScript(), ...args], {
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
    child.on('exit', (code) => resolve({ code, output }));
  });
}

export function defineSharedAcrossProcessesTests(suite: SpecRegistrar): void {
  if (!suite.context.capabilities.sharedAcrossProcesses) return;
  suite.test(
    'H1',
    'sharedAcrossProcesses: a second real process sees what this one saved, and its save fences this one',
    async (env) => {
      const moduleFile = suite.context.initializer.initializerModule;
      if (moduleFile === undefined) {
        env.notVerifiedNote = NO_SECOND_PROCESS_NOTE;
        return;
      }
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const { code, output } = await runSecondProcess([moduleFile, env.namespace, session.id]);
      expect(code, output).toBe(0);
      expect(output).toContain('saved');
      // This process still holds the revision from before the other process saved.
      session.messages.push(textMessage(env, 'user', 'from this process'));
      if (suite.context.capabilities.conditionalWrites) {
        await expectTypedError(opened.store.save(session, { fsync: true }), RevisionConflictError);
      }
      const reader = await env.openStore();
      const loaded = await reader.store.load(session.id);
      expect(loaded.messages.map((message) => message.content)).toContain(
        'from the second process',
      );
    },
  );
}
