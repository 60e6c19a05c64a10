import { describe, expect, it } from 'vitest';
import { hasWaitAof, planDurability, type ServerFacts } from '../src/index.js';

/** The decision part of the probe (B3), for servers this machine does not have (7.2, CONFIG off). */
const facts = (overrides: Partial<ServerFacts>): ServerFacts => ({
  server: 'host:6379',
  version: '7.0.15',
  appendonly: true,
  appendfsync: 'always',
  connectedReplicas: 0,
  ...overrides,
});

describe('planDurability', () => {
  it('uses the reply where appendfsync is always, WAITAOF on Redis ≥ 7.2 otherwise', () => {
    expect(planDurability('aof', 1, [facts({})])).toEqual({ ok: true, method: 'reply' });
    expect(
      planDurability('aof', 1, [facts({ version: '7.2.4', appendfsync: 'everysec' })]),
    ).toEqual({
      ok: true,
      method: 'waitaof',
    });
    // CONFIG refused: INFO said appendonly, nothing said appendfsync; 7.2 confirms anyway.
    expect(planDurability('aof', 1, [facts({ version: '7.4.0', appendfsync: null })])).toEqual({
      ok: true,
      method: 'waitaof',
    });
    // On a Cluster the weakest master decides.
    expect(
      planDurability('aof', 1, [facts({}), facts({ version: '8.0.1', appendfsync: 'no' })]),
    ).toEqual({ ok: true, method: 'waitaof' });
  });

  it('B3 on Redis ≥ 7.2: WAITAOF only where the reply does not already follow the fsync, never without an AOF', () => {
    // appendfsync always on 7.2: the reply confirms, as on 7.0 (WAITAOF would add nothing).
    expect(planDurability('aof', 1, [facts({ version: '7.2.0' })])).toEqual({
      ok: true,
      method: 'reply',
    });
    // The first version with WAITAOF, and appendfsync no (the kernel flushes when it likes).
    expect(planDurability('aof', 1, [facts({ version: '7.2.0', appendfsync: 'no' })])).toEqual({
      ok: true,
      method: 'waitaof',
    });
    // WAITAOF waits for the AOF: a 7.2 server without one is refused, not confirmed.
    expect(
      planDurability('aof', 1, [facts({ server: 'c:1', version: '7.4.1', appendonly: false })]),
    ).toMatchObject({ ok: false, server: 'c:1' });
    // A Cluster with a 7.0 master that fsyncs every second cannot be confirmed there, whatever
    // its 7.2 masters could do: the plan names the 7.0 one.
    const mixed = planDurability('aof', 1, [
      facts({ server: 'new:1', version: '7.2.4', appendfsync: 'everysec' }),
      facts({ server: 'old:1', version: '7.0.15', appendfsync: 'everysec' }),
    ]);
    expect(mixed).toMatchObject({ ok: false, server: 'old:1' });
    expect(!mixed.ok && mixed.reason).toContain('no WAITAOF');
    // 'replicas' waits with WAIT on every version.
    expect(
      planDurability('replicas', 1, [facts({ version: '7.4.0', connectedReplicas: 1 })]),
    ).toEqual({ ok: true, method: 'wait' });
  });

  it('refuses what cannot be confirmed, naming the server and the setting', () => {
    const everysec = planDurability('aof', 1, [facts({ appendfsync: 'everysec' })]);
    expect(everysec.ok).toBe(false);
    expect(!everysec.ok && everysec.reason).toContain('appendfsync always');
    const noAof = planDurability('aof', 1, [facts({ server: 'b:1', appendonly: false })]);
    expect(noAof).toMatchObject({ ok: false, server: 'b:1' });
    const unknown = planDurability('aof', 1, [facts({ appendonly: null })]);
    expect(unknown.ok).toBe(false);
    expect(planDurability('replicas', 2, [facts({ connectedReplicas: 1 })]).ok).toBe(false);
    expect(planDurability('replicas', 2, [facts({ connectedReplicas: 2 })])).toEqual({
      ok: true,
      method: 'wait',
    });
    expect(planDurability('none', 1, [])).toEqual({ ok: true, method: 'none' });
  });

  it('knows which versions have WAITAOF', () => {
    expect(['7.0.15', '7.1.0', '6.2.14', null].map(hasWaitAof)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(['7.2.0', '7.4.2', '8.0.0'].map(hasWaitAof)).toEqual([true, true, true]);
  });
});
