import { createMessage, createSessionStore, installShutdownHooks } from '@keepsake/core';
import { openS3Adapter } from '../src/index.js';

// Checks the bucket and probes conditional writes: an endpoint that ignores them throws
// S3CapabilityError now, not at the first lost update.
const adapter = await openS3Adapter({
  bucket: 'my-app-sessions',
  prefix: 'chats',
  region: 'eu-west-1',
});
const store = createSessionStore({ adapter, journal: { durability: 'group' } });
installShutdownHooks(store); // C2: flush on SIGTERM/SIGINT, then close the client

const session = await store.create({ title: 'Support chat' }, { fsync: true });
session.messages.push(createMessage({ role: 'user', content: 'Hello' }));
await store.save(session, { fsync: true }); // one conditional PUT, index entry included
