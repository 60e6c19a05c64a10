import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { RedisClusterProcesses } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTurn, scriptedTokens, type TurnOutcome } from './helpers/chaos-checks.js';
import { ChaosClient, InstancePool, seededRandom } from './helpers/chaos-client.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { call, readEvents } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

/**
 * Issue 40 item 3: three server instances on a Redis Cluster of 3 masters, each with a
 * replica (real processes on loopback ports), with `KEEPSAKE_REDIS_DURABILITY=replicas`
 * (replicas: 1), so an acknowledged write is on a replica. Chat clients send turns to random
 * instances and follow each answer's SSE stream, resuming on another instance whenever a
 * stream closes early, while the test SIGKILLs server instances (a replacement starts) and
 * Redis masters (the cluster promotes the replica; the killed node comes back as its
 * replica), each after a random number of further tokens the clients received. Afterwards:
 * every user message is in its transcript once (E1), every record a client received is in
 * the journal under its sequence (E2, B3: streamed means acknowledged, and acknowledged means
 * replicated), every completed answer is whole, every run of a killed owner is recovered
 * with exactly the text its journal holds (F1), and every stream ended (E9). It found a run
 * whose failure could not be recorded (its master failing over) left live in its process
 * forever, its streams there never ending (RunExecutor.recordFailure now retries).
 */
const SERVER_KILLS = 6;
const MASTER_KILLS = 3;
const CLIENTS = 6;
const ANSWER_WORDS = 30;
const seed = Number(process.env.KEEPSAKE_TEST_CHAOS_SEED ?? randomBytes(4).readUInt32BE());
const random = seededRandom(seed);
const keyPrefix = `chaos-${randomBytes(4).toString('hex')}`;

let cluster: RedisClusterProcesses;
const children: ChildServer[] = [];
/** Stops the clients' retry loops once the test is over, whatever its outcome. */
const halt = new AbortController();

beforeAll(async () => {
  cluster = await RedisClusterProcesses.start({
    masters: 3,
    replicas: 1,
    persistence: 'none',
    nodeTimeoutMs: 2_000,
  });
}, 120_000);
afterAll(async () => {
  halt.abort();
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await cluster?.dispose();
});

/** A server instance whose seed is a random node of the cluster (every node is running). */
async function startInstance(): Promise<ChildServer> {
  const node = cluster.nodes[random(0, cluster.nodes.length - 1)]!;
  const child = await startChildServer({
    KEEPSAKE_BACKEND: 'redis',
    KEEPSAKE_REDIS_MODE: 'cluster',
    KEEPSAKE_REDIS_URL: `redis://${node.host}:${node.port}`,
    KEEPSAKE_REDIS_KEY_PREFIX: keyPrefix,
    KEEPSAKE_REDIS_DURABILITY: 'replicas',
    KEEPSAKE_REDIS_REPLICAS: '1',
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: String(ANSWER_WORDS),
    // A run whose owner lives but could not record its failure (its master was failing
    // over) is recovered by a reader once silent this long; a dead owner's at once.
    KEEPSAKE_RECOVERY_GRACE_MS: '5000',
    KEEPSAKE_STREAM_POLL_MS: '50',
    KEEPSAKE_RATE_LIMIT_MAX: '1000000',
  });
  children.push(child);
  return child;
}

/**
 * Awaits the clients' last turns. A stream that never ends is the failure this test looks
 * for: while any turn is still open, say every 30 s which (the test's timeout then fails it).
 */
async function untilAllReturn(running: Promise<void>[], clients: ChaosClient[]): Promise<void> {
  const report = setInterval(() => {
    const open = clients.flatMap((client) => {
      const turn = client.turns.at(-1);
      return turn === undefined || turn.ending !== null
        ? []
        : [`${client.sessionId} run ${turn.runId} (reading from ${turn.streamingFrom})`];
    });
    console.error(`cluster chaos (seed ${seed}): still waiting for the end of ${open.join('; ')}`);
  }, 30_000);
  try {
    await Promise.all(running);
  } finally {
    clearInterval(report);
  }
}

/** Resolves once the clients received `count` tokens in all. */
class TokenCounter {
  count = 0;
  private waiters: Array<{ target: number; resolve: () => void }> = [];

  increment(): void {
    this.count += 1;
    this.waiters = this.waiters.filter((waiter) => {
      if (this.count < waiter.target) return true;
      waiter.resolve();
      return false;
    });
  }

  async reach(target: number): Promise<void> {
    if (this.count >= target) return;
    await new Promise<void>((resolve) => this.waiters.push({ target, resolve }));
  }
}

describe('three instances on a Redis Cluster with replicas, server and master kills', () => {
  it(`B3, E1, E2, E9, F1: ${SERVER_KILLS} server SIGKILLs and ${MASTER_KILLS} master SIGKILLs lose and duplicate nothing acknowledged, and every stream ends`, async () => {
    const pool = new InstancePool(random);
    for (const instance of await Promise.all([startInstance(), startInstance(), startInstance()])) {
      pool.add(instance);
    }
    const tokens = new TokenCounter();
    const clients: ChaosClient[] = [];
    for (let index = 0; index < CLIENTS; index++) {
      const created = await call(pool.pick().url, '/api/sessions', {
        token: aliceToken,
        method: 'POST',
        body: { title: `chaos ${index}` },
      });
      expect(created.status).toBe(201);
      clients.push(
        new ChaosClient({
          pool,
          token: aliceToken,
          sessionId: created.body.session.id,
          name: `client ${index}`,
          onToken: () => tokens.increment(),
          signal: halt.signal,
        }),
      );
    }
    const steps: string[] = [];
    let stop = false;
    const running = clients.map((client) => client.run(() => stop));

    // The kills, in a shuffled order, each after a random number of further tokens. A server
    // kill may land during a master's failover; its replacement starts once the cluster
    // is whole again (startup refuses a cluster it cannot probe).
    const plan = [
      ...Array<'server'>(SERVER_KILLS).fill('server'),
      ...Array<'master'>(MASTER_KILLS).fill('master'),
    ];
    for (let index = plan.length - 1; index > 0; index--) {
      const other = random(0, index);
      [plan[index], plan[other]] = [plan[other]!, plan[index]!];
    }
    let failover: Promise<void> = Promise.resolve();
    try {
      for (const kind of plan) {
        const after = random(20, 120);
        await tokens.reach(tokens.count + after);
        if (kind === 'server') {
          const victim = pool.takeRandom();
          steps.push(`server after ${after}`);
          await victim.kill('SIGKILL');
          await failover;
          pool.add(await startInstance());
        } else {
          await failover;
          const roles = await cluster.roles();
          const masters = [...roles].filter(([, role]) => role === 'master').map(([node]) => node);
          const master = masters[random(0, masters.length - 1)]!;
          steps.push(`master ${master.port} after ${after}`);
          failover = cluster.killMaster(master);
          // Surfaces at the next await of it; never an unhandled rejection meanwhile.
          failover.catch(() => {});
        }
      }
      await failover;
      await tokens.reach(tokens.count + 20);
    } finally {
      stop = true;
      await untilAllReturn(running, clients);
    }

    const problems: string[] = [];
    const outcomes = new Map<TurnOutcome, number>();
    let turns = 0;
    let tokensSeen = 0;
    let resumes = 0;
    const reader = pool.pick();
    for (const client of clients) {
      const sessionId = client.sessionId;
      const session = await call(reader.url, `/api/sessions/${sessionId}`, { token: aliceToken });
      expect(session.status).toBe(200);
      const messages = session.body.session.messages;
      if (session.body.session.pending !== null) {
        problems.push(`${sessionId}: a turn still pending`);
      }
      // E1: each acknowledged user message once, in the order sent.
      const users = messages
        .filter((message: { role: string }) => message.role === 'user')
        .map((message: { content: unknown }) => message.content);
      const sent = client.turns.map((turn) => turn.content);
      if (!isDeepStrictEqual(users, sent)) {
        problems.push(
          `${sessionId}: user messages ${JSON.stringify(users)}, sent ${JSON.stringify(sent)}`,
        );
      }
      for (const turn of client.turns) {
        const journal = await readEvents(
          `${reader.url}/api/sessions/${sessionId}/runs/${turn.runId}/events`,
          { token: aliceToken },
        );
        expect(journal.status).toBe(200);
        const check = checkTurn(
          turn,
          journal.events,
          messages,
          await scriptedTokens(turn.content, ANSWER_WORDS),
        );
        problems.push(...check.problems.map((problem) => `${turn.content}: ${problem}`));
        outcomes.set(check.outcome, (outcomes.get(check.outcome) ?? 0) + 1);
        turns += 1;
        tokensSeen += check.tokensSeen;
        resumes += turn.resumes;
      }
    }
    const unexpected = clients.flatMap((client) => client.unexpected);
    const context = `seed ${seed}; kills: ${steps.join(', ')}`;
    expect(problems, context).toEqual([]);
    expect(steps.filter((step) => step.startsWith('server'))).toHaveLength(SERVER_KILLS);
    expect(steps.filter((step) => step.startsWith('master'))).toHaveLength(MASTER_KILLS);
    // The server kills closed streams that the clients resumed elsewhere.
    expect(resumes).toBeGreaterThan(0);
    console.info(
      `cluster chaos (seed ${seed}): ${SERVER_KILLS} server and ${MASTER_KILLS} master SIGKILLs; ` +
        `${turns} turns (${outcomes.get('completed') ?? 0} completed, ` +
        `${outcomes.get('interrupted') ?? 0} interrupted, ${outcomes.get('errored') ?? 0} errored, ` +
        `${outcomes.get('other') ?? 0} other), ${tokensSeen} tokens streamed, ${resumes} resumed streams, ` +
        `${unexpected.length} retried answers (${[...new Set(unexpected)].join(', ')}); ` +
        '0 lost, 0 duplicated, every stream ended',
    );
  }, 360_000);
});
