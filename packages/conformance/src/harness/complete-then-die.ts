/**
 * A worker process of the answered-run tests (`e-answered-run.ts`): `node
 * complete-then-die.js <initializer module> <namespace> <session id> <journal|messages>`
 * begins a run, appends three tokens, prints `{"runId":…}`, and calls `complete()` (folding
 * the journal, or with assistant messages of its own). Its adapter SIGKILLs this process
 * when the store appends the journal's `done` record, after the completed turn was saved:
 * the one window where a turn is answered but its journal never ends (E5). It imports
 * nothing relative, so Node runs it as .ts or .js.
 */
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createMessage, createSessionStore, type StorageAdapter } from '@keepsake/core';

interface Initializer {
  createAdapter(namespace: string): Promise<StorageAdapter>;
  setup?(): Promise<void>;
}

const [moduleFile, namespace, sessionId, mode] = process.argv.slice(2);
if (
  moduleFile === undefined ||
  namespace === undefined ||
  sessionId === undefined ||
  (mode !== 'journal' && mode !== 'messages')
) {
  throw new TypeError(
    'usage: complete-then-die <initializer module> <namespace> <session id> <journal|messages>',
  );
}
const imported = (await import(pathToFileURL(moduleFile).href)) as { default?: Initializer };
const initializer = imported.default;
if (typeof initializer?.createAdapter !== 'function') {
  throw new TypeError(`${moduleFile} (initializerModule) must export default the initializer`);
}
await initializer.setup?.();
const adapter = await initializer.createAdapter(namespace);
// The kill lands where the journal's ending would be written: the turn is saved by then.
const realAppendLog = adapter.appendLog.bind(adapter);
adapter.appendLog = async (...args: Parameters<StorageAdapter['appendLog']>) => {
  if (args[2].some((record) => record.text.includes('"type":"done"'))) {
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {});
  }
  return realAppendLog(...args);
};
const store = createSessionStore({ adapter, journal: { durability: 'each' } });
const run = await store.beginRun(sessionId, {
  userMessage: createMessage({ role: 'user', content: 'question' }),
});
for (const text of ['one ', 'two ', 'three']) {
  await run.append({ type: 'token', data: { text } });
}
writeSync(1, `${JSON.stringify({ runId: run.runId })}\n`);
await (mode === 'journal'
  ? run.complete()
  : run.complete({ assistantMessages: [{ role: 'assistant', content: 'one two three' }] }));
// Never reached: the adapter killed the process at the `done` record.
writeSync(1, `${JSON.stringify({ survived: true })}\n`);
