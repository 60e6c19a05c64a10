import { describe, expect, it } from 'vitest';
import { createMessage } from '../sessions/create-message.js';
import { createSessionStore } from '../store.js';
import { ManualClock } from '../time/clock.js';
import { createMemoryBackend, memoryAdapter } from './memory-adapter.js';
import { migrateBackend } from './migrate.js';

describe('migrateBackend', () => {
  it('H3: sessions, retained revisions, journals and lifecycle state arrive intact', async () => {
    const clock = new ManualClock();
    const backend = createMemoryBackend();
    const sourceAdapter = memoryAdapter({ backend });
    const source = createSessionStore({ adapter: sourceAdapter, clock });
    const session = await source.create({ id: 'chat', title: 'Moving' });
    session.messages.push(
      createMessage({ role: 'user', content: 'one' }),
      createMessage({ role: 'assistant', content: 'two' }),
    );
    await source.save(session);
    session.messages.pop();
    await source.save(session, { allowShrink: true });
    const run = await source.beginRun('chat', { userMessage: { role: 'user', content: 'q' } });
    await run.append({ type: 'token', data: { text: 'answer' } });
    await run.complete();
    await source.close();

    const targetAdapter = memoryAdapter();
    const report = await migrateBackend(memoryAdapter({ backend }), targetAdapter);
    expect(report.documents).toMatchObject({ sessions: 1, revisions: 1, lifecycle: 1 });
    expect(report.journals).toBe(1);

    const target = createSessionStore({ adapter: targetAdapter, clock });
    const moved = await target.load('chat');
    expect(moved.messages.map((message) => message.content)).toEqual(['one', 'q', 'answer']);
    expect(moved.revision).toBe(session.revision);
    expect(await target.retainedRevisions('chat')).toEqual([2]);
    expect((await target.runSummary('chat', run.runId)).terminalState).toBe('completed');
    expect(await target.lifecycle.hasUncommittedWork('chat')).toBe(true);
    expect((await target.list()).sessions.map((summary) => summary.id)).toEqual(['chat']);
    await target.close();
  });
});
