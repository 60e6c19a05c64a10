/**
 * The second, real process of the `sharedAcrossProcesses` check (H1, B4; issue 24):
 * `node second-process.js <initializer module> <namespace> <session id>` loads the
 * session through its own adapter and store, appends one message and saves it durably,
 * then prints "saved". It imports nothing relative, so Node runs it as .ts or .js.
 */
import { pathToFileURL } from 'node:url';
import { createMessage, createSessionStore, type StorageAdapter } from '@keepsake/core';

interface Initializer {
  createAdapter(namespace: string): Promise<StorageAdapter>;
  setup?(): Promise<void>;
}

const [moduleFile, namespace, sessionId] = process.argv.slice(2);
if (moduleFile === undefined || namespace === undefined || sessionId === undefined) {
  throw new TypeError('usage: second-process <initializer module> <namespace> <session id>');
}
const imported = (await import(pathToFileURL(moduleFile).href)) as { default?: Initializer };
const initializer = imported.default;
if (typeof initializer?.createAdapter !== 'function') {
  throw new TypeError(`${moduleFile} (initializerModule) must export default the initializer`);
}
await initializer.setup?.();
const store = createSessionStore({ adapter: await initializer.createAdapter(namespace) });
const session = await store.load(sessionId);
session.messages.push(createMessage({ role: 'user', content: 'from the second process' }));
await store.save(session, { fsync: true });
await store.close();
process.stdout.write('saved\n');
