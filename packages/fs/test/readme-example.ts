import { createMessage, createSessionStore, installShutdownHooks } from '@keepsake/core';
import { fsAdapter } from '../src/index.js';

const store = createSessionStore({
  adapter: fsAdapter({ directory: './data/keepsake' }),
  journal: { durability: 'group' }, // E2: streamed events share fdatasyncs
});
installShutdownHooks(store); // C2: flush with fsync on SIGTERM/SIGINT

const session = await store.create({ title: 'Support chat' }, { fsync: true });
session.messages.push(createMessage({ role: 'user', content: 'Hello' }));
await store.save(session, { fsync: true }); // one small append, not a rewrite of the history
