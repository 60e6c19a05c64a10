import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { RedisAdapter, RedisAdapterOptions } from '../../src/index.js';
import { isSubsequence, messageIds, openStore } from './stores.js';

const hooks = fileURLToPath(new URL('../fixtures/ts-hooks.mjs', import.meta.url));
const writer = fileURLToPath(new URL('../fixtures/failover-writer.ts', import.meta.url));

/**
 * The history a failover test checks: what the writing process (fixtures/failover-writer.ts)
 * acknowledged, per session, in the order it was acknowledged, and how its writes failed.
 */
export class FailoverWriter {
  readonly saves = new Map<string, string[]>();
  readonly appends = new Map<string, number>();
  /** Writes that failed typed, and whether each was retryable. */
  readonly failures: Array<{ retryable: boolean; line: string }> = [];
  /** Lines that break the contract at once: an untyped failure, a lost append. */
  readonly violations: string[] = [];
  ownerId: string | null = null;
  acknowledged = 0;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exited: Promise<unknown[]>;
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  private pending = '';
  private stderr = '';

  constructor(options: RedisAdapterOptions, sessions: number) {
    this.child = spawn(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        '--no-warnings',
        '--import',
        hooks,
        writer,
        JSON.stringify(options),
        String(sessions),
      ],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-redis-test-cache') },
      },
    );
    this.exited = once(this.child, 'exit');
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => this.read(chunk));
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (this.stderr.length < 100_000) this.stderr += chunk;
    });
  }

  /** Resolves once `count` more writes than now have been acknowledged. */
  untilAcknowledged(count: number): Promise<void> {
    const target = this.acknowledged + count;
    if (this.acknowledged >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ count: target, resolve });
      this.child.once('exit', () =>
        reject(
          new Error(`the writer exited early:\n${this.stderr}\n${this.violations.join('\n')}`),
        ),
      );
    });
  }

  /** A copy of what was acknowledged so far. */
  snapshot(): { saves: Map<string, string[]>; appends: Map<string, number> } {
    return {
      saves: new Map([...this.saves].map(([id, list]) => [id, [...list]])),
      appends: new Map(this.appends),
    };
  }

  /** Stops the loops and waits for the writer to exit; it must exit cleanly. */
  async stop(): Promise<void> {
    this.child.stdin.write('stop\n');
    const [code] = (await this.exited) as [number | null];
    expect(code, this.stderr).toBe(0);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private read(chunk: string): void {
    this.pending += chunk;
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    for (const line of lines) this.line(line);
    this.waiters = this.waiters.filter((waiter) => {
      if (this.acknowledged < waiter.count) return true;
      waiter.resolve();
      return false;
    });
  }

  private line(line: string): void {
    const [kind, first, second] = line.split(' ');
    if (kind === 'owner') this.ownerId = first ?? null;
    else if (kind === 'save') {
      const list = this.saves.get(first!) ?? [];
      list.push(second!);
      this.saves.set(first!, list);
      this.acknowledged++;
    } else if (kind === 'append') {
      this.appends.set(first!, Number(second));
      this.acknowledged++;
    } else if (kind === 'failed') {
      if (this.failures.length < 100_000) this.failures.push({ retryable: first === 'true', line });
    } else if (kind === 'untyped' || kind === 'lost') this.violations.push(line);
  }
}

/**
 * Checks a history against the store: every acknowledged save's message is stored, once, in
 * the order acknowledged (messages that landed without an acknowledgement may sit between);
 * every journal holds records 1…n without a gap or a repeat, n at least the last
 * acknowledged. Returns how many acknowledged writes were missing (the test decides whether
 * that is allowed) and the problems found.
 */
export async function checkHistory(
  reader: { options: RedisAdapterOptions },
  history: { saves: Map<string, string[]>; appends: Map<string, number> },
): Promise<{ lostSaves: number; lostAppends: number; problems: string[] }> {
  const { store, adapter, close } = openStore(reader.options);
  const problems: string[] = [];
  let lostSaves = 0;
  let lostAppends = 0;
  try {
    for (const [id, acknowledged] of history.saves) {
      const stored = messageIds(await store.load(id));
      if (new Set(stored).size !== stored.length) problems.push(`${id}: a message is stored twice`);
      if (!isSubsequence(acknowledged, stored)) {
        const missing = acknowledged.filter((messageId) => !stored.includes(messageId));
        lostSaves += missing.length;
        problems.push(
          `${id}: acknowledged saves missing or out of order (missing: ${missing.join(', ') || 'none'})`,
        );
      }
    }
    for (const [id, last] of history.appends) {
      const sequences = await readSequences(adapter, id);
      if (sequences.some((sequence, index) => sequence !== index + 1)) {
        problems.push(`${id}: the journal is not 1…n: ${sequences.join(',')}`);
      }
      if (sequences.length < last) {
        lostAppends += last - sequences.length;
        problems.push(`${id}: the journal ends at ${sequences.length}, ${last} was acknowledged`);
      }
    }
  } finally {
    await close();
  }
  return { lostSaves, lostAppends, problems };
}

async function readSequences(adapter: RedisAdapter, id: string): Promise<number[]> {
  const journal = await adapter.readLog(id, 'run-1', { afterSequence: 0, limit: 1_000_000 });
  return journal.records.map((record) => record.sequence);
}

/** A random whole number in [low, high] (printed seeds are not needed: each run's kills differ on purpose). */
export function randomBetween(low: number, high: number): number {
  return low + Math.floor(Math.random() * (high - low + 1));
}
