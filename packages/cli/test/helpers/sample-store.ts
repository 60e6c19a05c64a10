import { createMessage, createSessionStore, type StorageAdapter } from '@keepsake/core';

export interface SampleOptions {
  /** Sessions to create. */
  sessions: number;
  /** Tokens each run streams before it ends. */
  tokensPerRun?: number;
}

export interface SampleStore {
  sessionIds: string[];
  /** The session whose run died mid-answer (its pending turn and open journal are kept). */
  crashedSessionId: string;
  /** A session that was shrunk once, so it has a retained revision (B5). */
  shrunkSessionId: string;
}

/**
 * Fills a store through the public API with everything a migration must carry: sessions
 * saved several times (fs keeps them as a base and deltas), extra fields and metadata (A4),
 * Unicode, a deliberate shrink (a retained revision, B5), completed, cancelled and failed runs
 * (journals, E2, E6), lifecycle state (G9, written when a run completes) and a run that
 * "crashed" mid-answer (a pending turn and an unsealed journal, E1). Closes the adapter.
 */
export async function fillSampleStore(
  adapter: StorageAdapter,
  options: SampleOptions,
): Promise<SampleStore> {
  // Journals fsynced only when a run ends: filling a large store stays quick.
  const store = createSessionStore({ adapter, journal: { durability: 'terminal' } });
  const tokens = options.tokensPerRun ?? 3;
  const sessionIds: string[] = [];
  for (let index = 0; index < options.sessions; index++) {
    const id = `chat-${String(index).padStart(4, '0')}`;
    sessionIds.push(id);
    const session = await store.create({
      id,
      title: `Chat ${index} — ünïcödé ✓`,
      metadata: { tenant: `t${index % 3}`, nested: { list: [1, 'two', null] } },
      providerState: { responseId: `resp_${index}`, encrypted: 'AAEC' },
    });
    session.messages.push(createMessage({ role: 'system', content: 'Be brief.' }));
    await store.save(session);
    session.messages.push(
      createMessage({ role: 'user', content: `Question ${index}\nwith a second line` }),
    );
    await store.save(session);
    const mode = index % 3;
    const run = await store.beginRun(id, {
      userMessage: { role: 'user', content: [{ type: 'text', text: `Follow-up ${index}` }] },
    });
    for (let token = 0; token < tokens; token++) {
      await run.append({ type: 'token', data: { text: `t${token} ` } });
    }
    if (mode === 0) await run.complete();
    else if (mode === 1) await run.cancel();
    else await run.fail({ message: 'provider said no', code: 'upstream' });
  }
  const shrunkSessionId = sessionIds[0]!;
  const shrunk = await store.load(shrunkSessionId);
  shrunk.messages.pop();
  await store.save(shrunk, { allowShrink: true });

  const crashedSessionId = 'chat-crashed';
  await store.create({ id: crashedSessionId, title: 'Died mid-answer' });
  const crashed = await store.beginRun(crashedSessionId, {
    userMessage: { role: 'user', content: 'Will you finish?' },
  });
  await crashed.append({ type: 'token', data: { text: 'I was about to' } });
  // Neither complete() nor cancel(): what a process killed mid-answer leaves behind.
  // close() stops the run's checkpoints and leaves its pending turn stored.
  await store.close();
  sessionIds.push(crashedSessionId);
  return { sessionIds, crashedSessionId, shrunkSessionId };
}
