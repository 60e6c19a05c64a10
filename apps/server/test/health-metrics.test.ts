import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, createSession, sendMessage } from './helpers/chat-flows.js';
import { createGatedAgent } from './helpers/gated-agent.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

let harness: TestServer;

beforeAll(async () => {
  harness = await startTestServer({ config: { store: { journalDurability: 'each' } } });
});
afterAll(() => harness.close());

/** A sample line without the labels every series carries (`backend`, `instance`). */
function withoutDefaultLabels(line: string): string {
  return line
    .replace(/,?(backend|instance)="[^"]*"/g, '')
    .replace('{,', '{')
    .replace('{}', '');
}

/** The value of one Prometheus sample line (default labels aside), or undefined. */
function sample(text: string, name: string): number | undefined {
  const line = text
    .split('\n')
    .map(withoutDefaultLabels)
    .find((entry) => entry.startsWith(`${name} `));
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
    // Issue 41 item 2: one name for durable writes on every backend, and labels on every series.
    expect(sample(text, 'keepsake_durable_write_duration_seconds_count{operation="append"}')).toBe(
      sample(text, 'keepsake_fsync_duration_seconds_count{operation="append"}'),
    );
    const instance = harness.server.config.server.instanceId;
    const series = text.split('\n').filter((line) => line.startsWith('keepsake_'));
    expect(series.length).toBeGreaterThan(10);
    for (const line of series) {
      expect(line).toContain('backend="fs"');
      expect(line).toContain(`instance="${instance}"`);
    }
    for (const family of [
      'keepsake_durable_write_duration_seconds',
      'keepsake_takeovers_total',
      'keepsake_late_appends_refused_total',
      'keepsake_backend_errors_total',
      'keepsake_sse_streams_open',
      'keepsake_sse_streams_remote',
    ]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    expect(sample(text, 'keepsake_sse_streams_open')).toBe(0);
  });

  it('a run lookup names the instance that answered and whether it streams the run', async () => {
    const sessionId = await createSession(harness.url, aliceToken);
    const { runId } = await chat(harness.url, aliceToken, sessionId, 'where am I');
    await Promise.all(harness.server.namespaces.all().map((namespace) => namespace.runs.settle()));
    const found = await call(harness.url, `/api/runs/${runId}`, { token: aliceToken });
    expect(found.body).toMatchObject({
      instance: harness.server.config.server.instanceId,
      streamedHere: false,
    });
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

describe('stream metrics across instances', () => {
  it('counts an SSE stream on an instance that does not stream the run as remote', async () => {
    const gated = createGatedAgent();
    const owner = await startTestServer({ agent: gated.agent });
    const other = await startTestServer({
      config: { backend: { kind: 'fs', directory: owner.dataDirectory } },
    });
    try {
      const sessionId = await createSession(owner.url, aliceToken);
      const { eventsUrl } = await sendMessage(owner.url, aliceToken, sessionId, 'follow me');
      gated.push({ type: 'token', text: 'first ' });
      // Read on the other instance until the first token arrived: the stream is then open.
      const reading = readEvents(`${other.url}${eventsUrl}`, { token: aliceToken });
      const local = readEvents(`${owner.url}${eventsUrl}`, {
        token: aliceToken,
        until: (event) => event.event === 'token',
      });
      await local;
      const gauges = async (server: TestServer) => {
        const text = (await call(server.url, '/metrics')).body as string;
        return [
          sample(text, 'keepsake_sse_streams_open'),
          sample(text, 'keepsake_sse_streams_remote'),
        ];
      };
      // Wait for the event that matters (the remote stream registered), not for a time.
      let seen = await gauges(other);
      while (seen[0] !== 1) seen = await gauges(other);
      expect(seen).toEqual([1, 1]);
      gated.finish();
      expect((await reading).ended).toBe(true);
      seen = await gauges(other);
      while (seen[0] !== 0) seen = await gauges(other);
      expect(seen).toEqual([0, 0]);
    } finally {
      await other.close();
      await owner.close();
    }
  });
});
