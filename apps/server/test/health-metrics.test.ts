import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, createSession } from './helpers/chat-flows.js';
import { call } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

let harness: TestServer;

beforeAll(async () => {
  harness = await startTestServer({ config: { store: { journalDurability: 'each' } } });
});
afterAll(() => harness.close());

/** The value of one Prometheus sample line, or undefined. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('health, readiness and metrics', () => {
  it('answers liveness and readiness without a token', async () => {
    expect(await call(harness.url, '/healthz')).toMatchObject({
      status: 200,
      body: { status: 'ok' },
    });
    expect(await call(harness.url, '/readyz')).toMatchObject({
      status: 200,
      body: { status: 'ready' },
    });
  });

  it('tells the sign-in screen the auth mode, agent and backend without a token', async () => {
    expect(await call(harness.url, '/api/info')).toMatchObject({
      status: 200,
      body: { auth: 'token', agent: 'scripted', backend: 'fs' },
    });
  });

  it('exports save, fsync and append latency histograms, conflicts, recoveries and runs', async () => {
    const sessionId = await createSession(harness.url, aliceToken);
    await chat(harness.url, aliceToken, sessionId, 'measure me');
    // The stream ends with the journal's last record; the run's own bookkeeping ends just after.
    await Promise.all(harness.server.namespaces.all().map((namespace) => namespace.runs.settle()));
    const response = await call(harness.url, '/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = response.body as string;
    for (const family of [
      'keepsake_save_duration_seconds',
      'keepsake_fsync_duration_seconds',
      'keepsake_journal_append_duration_seconds',
      'keepsake_revision_conflicts_total',
      'keepsake_conflict_retries_total',
      'keepsake_recoveries_total',
      'keepsake_runs_in_flight',
      'keepsake_runs_total',
    ]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    expect(
      sample(text, 'keepsake_save_duration_seconds_count{fsync="true",delta="false"}'),
    ).toBeGreaterThan(0);
    expect(
      sample(text, 'keepsake_fsync_duration_seconds_count{operation="append"}'),
    ).toBeGreaterThan(0);
    expect(
      sample(text, 'keepsake_journal_append_duration_seconds_count{durable="true"}'),
    ).toBeGreaterThan(5);
    expect(sample(text, 'keepsake_runs_total{state="completed"}')).toBe(1);
    expect(sample(text, 'keepsake_runs_in_flight')).toBe(0);
  });

  it('C2: readiness turns 503 once shutdown begins', async () => {
    const closing = await startTestServer();
    const shutdown = closing.server.close();
    const response = await closing.server.app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(503);
    const report = await shutdown;
    expect(report.timedOut).toBe(false);
    await closing.close();
  });
});
