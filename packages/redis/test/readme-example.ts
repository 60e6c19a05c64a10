import { createMessage, createSessionStore, installShutdownHooks } from '@keepsake/core';
import { openRedisAdapter } from '../src/index.js';

// Connects and probes the server: without `appendonly yes` + `appendfsync always` this
// throws RedisDurabilityError now, not at the first lost write.
const adapter = await openRedisAdapter({
  url: 'redis://127.0.0.1:6379',
  keyPrefix: 'myapp',
  durability: 'aof',
});
const store = createSessionStore({ adapter, journal: { durability: 'group' } });
installShutdownHooks(store); // C2: flush on SIGTERM/SIGINT, then close the connection

const session = await store.create({ title: 'Support chat' }, { fsync: true });
session.messages.push(createMessage({ role: 'user', content: 'Hello' }));
await store.save(session, { fsync: true }); // one APPEND in one Lua script, one round trip
