import { describe, expect, it } from 'vitest';
import { createMemoryBackend, memoryAdapter } from '../../adapter/memory-adapter.js';
import { createSessionStore } from '../../store.js';
import type { StoreEvent } from '../../store-types.js';

describe('followRun when the backend cannot push (E9)', () => {
  it('warns that the push could not be set up, and still follows the run to its end by polling', async () => {
    const backend = createMemoryBackend();
    const owner = createSessionStore({ adapter: memoryAdapter({ backend }) });
    // FAULT INJECTION: the follower's adapter fails to set up its push, as one that has
    // reached a limit (inotify's max_user_watches) would.
    const failing = memoryAdapter({ backend });
    failing.watchLog = () => {
      throw new Error('FAULT INJECTION: no more watches');
    };
    const follower = createSessionStore({
      adapter: failing,
      runs: { followPollMs: 10, followPushedPollMs: 3_600_000 },
    });
    const events: StoreEvent[] = [];
    follower.on((event) => events.push(event));
    const session = await owner.create();
    const run = await owner.beginRun(session.id, { userMessage: { role: 'user', content: 'hi' } });
    await run.append({ type: 'token', data: { text: 'one' } });
    const items: string[] = [];
    const following = (async () => {
      for await (const item of follower.followRun(session.id, run.runId)) {
        items.push(item.kind === 'record' ? `record ${item.record.type}` : item.kind);
        // Ends the owner's run once the follower has caught up: only the poll can tell it.
        if (item.kind === 'record' && item.record.type === 'token') await run.complete();
      }
    })();
    await following;
    expect(items).toEqual(['record token', 'record done', 'end']);
    const warnings = events.filter(
      (event) => event.type === 'warning' && event.field === 'followRun',
    );
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]).toMatchObject({
      sessionId: session.id,
      message: expect.stringContaining('no more watches'),
    });
    await follower.close();
    await owner.close();
  });
});
