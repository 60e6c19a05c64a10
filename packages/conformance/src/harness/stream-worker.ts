/**
 * A worker process of the randomized process-kill test (`e-process-kills.ts`):
 * `node stream-worker.js <initializer module> <namespace> <session ids, comma-separated>
 * <seed> <label>` streams answers into the shared sessions until it is killed. When a
 * session is busy with another process's answer it cancels that answer (a takeover from
 * another instance) or loads the session (a repair of a dead run past the grace period),
 * so it often waits on what a process that is about to be SIGKILLed holds.
 *
 * After each append resolves (acknowledged: durable as the journal policy says) it prints
 * one JSON line `{"ack":…}` with the session, run, sequence and text, written synchronously
 * so the line is out before a kill can land; a typed error it expects is `{"refused":…}`,
 * any other is `{"error":…}`. It imports nothing relative, so Node runs it as .ts or .js.
 */
import { writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import {
  createMessage,
  createSessionStore,
  KeepsakeError,
  type RunHandle,
  type StorageAdapter,
} from '@keepsake/core';

interface Initializer {
  createAdapter(namespace: string): Promise<StorageAdapter>;
  setup?(): Promise<void>;
}

/** F1: a run silent this long looks dead to the other processes (real time). */
const GRACE_MS = 250;

/** Typed refusals the contract gives when processes race (E6, E7, B4): not failures. */
const EXPECTED = new Set([
  'SessionBusyError',
  'RevisionConflictError',
  'RunNotActiveError',
  'JournalSealedError',
  'RunTakenOverError',
]);

const [moduleFile, namespace, idsText, seedText, label] = process.argv.slice(2);
if (
  moduleFile === undefined ||
  namespace === undefined ||
  idsText === undefined ||
  seedText === undefined ||
  label === undefined
) {
  throw new TypeError(
    'usage: stream-worker <initializer module> <namespace> <session ids> <seed> <label>',
  );
}

/** mulberry32: the worker's choices follow from its seed, printed by the test. */
let state = Number(seedText) >>> 0;
function random(): number {
  state = (state + 0x6d2b79f5) >>> 0;
  let value = state;
  value = Math.imul(value ^ (value >>> 15), value | 1);
  value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
  return ((value ^ (value >>> 14)) >>> 0) / 2 ** 32;
}

function print(line: object): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

/** Reports a rejection: expected refusals go on, anything else is printed as an error. */
function report(step: string, error: unknown): void {
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  const expected = KeepsakeError.isInstance(error) && EXPECTED.has(name);
  print(expected ? { refused: { step, name } } : { error: { step, name, message } });
}

// The test keeps our stdin open while it lives: when it goes, so do we.
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();

const imported = (await import(pathToFileURL(moduleFile).href)) as { default?: Initializer };
const initializer = imported.default;
if (typeof initializer?.createAdapter !== 'function') {
  throw new TypeError(`${moduleFile} (initializerModule) must export default the initializer`);
}
await initializer.setup?.();
// Both policies resolve an append once it is durable (E2); `terminal` does not, so a
// kill may take what it acknowledged, as the contract allows.
const durability = random() < 0.5 ? ('each' as const) : ('group' as const);
const store = createSessionStore({
  adapter: await initializer.createAdapter(namespace),
  journal: { durability },
  recovery: { graceMs: GRACE_MS },
});
const ids = idsText.split(',');
print({ started: { label, durability } });

for (let turn = 0; ; turn++) {
  const sessionId = ids[Math.floor(random() * ids.length)]!;
  let run: RunHandle;
  try {
    run = await store.beginRun(sessionId, {
      userMessage: createMessage({ role: 'user', content: `${label} question ${turn}` }),
    });
  } catch (error) {
    report('beginRun', error);
    // Another process's answer streams there (or a dead one's, until the grace period
    // passes): take it over, which waits on whatever that process holds.
    await (random() < 0.5
      ? store.cancelRun(sessionId).catch((cause: unknown) => report('cancelRun', cause))
      : store.load(sessionId, { refresh: true }).catch((cause: unknown) => report('load', cause)));
    await sleep(random() * 20);
    continue;
  }
  const tokens = 1 + Math.floor(random() * 30);
  let active = true;
  for (let index = 0; index < tokens && active; index++) {
    const text = `${label}.${turn}.${index} `;
    try {
      const record = await run.append({ type: 'token', data: { text } });
      print({ ack: { sessionId, runId: run.runId, sequence: record.sequence, text } });
    } catch (error) {
      // Cancelled or fenced by another process: its later appends are refused (E6).
      report('append', error);
      active = false;
    }
    if (random() < 0.2) await sleep(random() * 5);
  }
  if (!active) continue;
  const ending = random();
  // Some answers are left streaming: another process repairs them past the grace period.
  if (ending < 0.6) await run.complete().catch((error: unknown) => report('complete', error));
  else if (ending < 0.8) await run.cancel().catch((error: unknown) => report('cancel', error));
}
