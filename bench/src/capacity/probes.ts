import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { redisAdapter } from '@keepsake/redis';
import { RedisClusterProcesses, RedisServerProcess } from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import {
  containerEngineAvailable,
  type S3Target,
  startS3Target,
  testClientConfig,
} from '@keepsake/s3/testing';
import { Redis } from 'ioredis';
import { countingNodeFileSystem } from './counting-files.js';

const exec = promisify(execFile);

/** Cumulative counters of a backend at one moment; a window is the difference of two. */
export interface Snapshot {
  readonly counts: Record<string, number>;
  readonly bytesWritten: number;
  readonly serverCpuMicros: number | null;
  /** fs: bytes of pages this process dirtied (`write_bytes`), what the disk is asked to write. */
  readonly pageBytes: number | null;
  /** Per server process (Cluster nodes), its share of the counts, for the hot-node figure. */
  readonly countsByNode: readonly number[];
}

export interface Stored {
  readonly bytes: number;
  readonly items: number;
}

/** One backend this process started, with what it can count. */
export interface Probe {
  readonly backend: 'fs' | 'redis' | 'redis-cluster' | 's3';
  readonly description: string;
  /** What the counts are (for the report). */
  readonly countsAre: string;
  readonly bytesWrittenAre: string;
  readonly storedAre: string;
  /** An adapter for a store; `role` distinguishes the run's instance from a follower's. */
  adapter(role: 'main' | 'follower'): StorageAdapter;
  /** Store options this backend runs with (journal durability). */
  readonly journal: { durability: 'terminal' | 'group' | 'each' };
  snapshot(): Promise<Snapshot>;
  stored(): Promise<Stored>;
  dispose(): Promise<void>;
}

/** User + system CPU of a process (every thread), from /proc, in µs; 0 when it is gone. */
export async function processCpuMicros(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1_000_000) / 100;
  } catch {
    return 0;
  }
}

/** This process's `/proc/self/io`: bytes it caused to be written to storage, and by write calls. */
async function selfIo(): Promise<{ writeBytes: number; wchar: number }> {
  const text = await readFile('/proc/self/io', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    writeBytes: field('write_bytes') - field('cancelled_write_bytes'),
    wchar: field('wchar'),
  };
}

export async function fsProbe(): Promise<Probe> {
  const directory = await mkdtemp(join(tmpdir(), 'keepsake-capacity-'));
  const { fileSystem, counts } = countingNodeFileSystem();
  const adapters: StorageAdapter[] = [];
  return {
    backend: 'fs',
    description: `@keepsake/fs on ext4 (${directory}), journal durability group`,
    countsAre:
      'calls into the file system layer: fdatasync, fsync, write, open, rename, unlink, readFile',
    bytesWrittenAre:
      'bytes passed to write calls (wchar of /proc/self/io; this process writes to no socket); pages dirtied (write_bytes − cancelled_write_bytes) in the unit costs',
    storedAre: 'disk usage (du, allocated blocks) and files',
    journal: { durability: 'group' },
    adapter: () => {
      const adapter = fsAdapter({ directory, fileSystem });
      adapters.push(adapter);
      return adapter;
    },
    snapshot: async () => {
      const io = await selfIo();
      return {
        counts: { ...Object.fromEntries(counts) },
        bytesWritten: io.wchar,
        serverCpuMicros: null,
        pageBytes: io.writeBytes,
        countsByNode: [],
      };
    },
    stored: async () => {
      const [{ stdout: usage }, { stdout: files }] = await Promise.all([
        exec('du', ['-s', '-B1', directory]),
        exec('sh', ['-c', `find '${directory}' -type f | wc -l`]),
      ]);
      return { bytes: Number(usage.split('\t')[0]), items: Number(files.trim()) };
    },
    dispose: async () => {
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** INFO sections of one server, parsed into fields. */
async function info(client: Redis, section: string): Promise<Map<string, string>> {
  const text = (await client.info(section)) as string;
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

/** Commands a server ran, by name, from INFO commandstats (calls made inside scripts included). */
async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [field, value] of await info(client, 'commandstats')) {
    const name = field.replace(/^cmdstat_/, '');
    // This probe's own questions are not the store's.
    if (name === 'info' || name === 'memory' || name === 'dbsize' || name === 'config') continue;
    calls[name.toUpperCase()] = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
  }
  return calls;
}

interface RedisNode {
  readonly admin: Redis;
  readonly pid: number | null;
}

function redisProbeOf(
  backend: 'redis' | 'redis-cluster',
  description: string,
  nodes: readonly RedisNode[],
  adapterFor: () => StorageAdapter,
  stop: () => Promise<void>,
): Probe {
  const adapters: StorageAdapter[] = [];
  return {
    backend,
    description,
    countsAre:
      'commands the server ran (INFO commandstats; commands a Lua script runs counted too, EVALSHA is the round trip)',
    bytesWrittenAre:
      'AOF growth (INFO persistence aof_current_size; no AOF rewrite during the run)',
    storedAre: 'used_memory (INFO memory) and keys (DBSIZE), every master',
    journal: { durability: 'group' },
    adapter: () => {
      const adapter = adapterFor();
      adapters.push(adapter);
      return adapter;
    },
    snapshot: async () => {
      const perNode = await Promise.all(
        nodes.map(async (node) => ({
          calls: await commandCalls(node.admin),
          aof: Number((await info(node.admin, 'persistence')).get('aof_current_size') ?? 0),
          cpu: node.pid === null ? 0 : await processCpuMicros(node.pid),
        })),
      );
      const counts: Record<string, number> = {};
      for (const node of perNode) {
        for (const [name, value] of Object.entries(node.calls)) {
          counts[name] = (counts[name] ?? 0) + value;
        }
      }
      return {
        counts,
        bytesWritten: perNode.reduce((sum, node) => sum + node.aof, 0),
        serverCpuMicros: perNode.reduce((sum, node) => sum + node.cpu, 0),
        pageBytes: null,
        countsByNode: perNode.map((node) => Object.values(node.calls).reduce((a, b) => a + b, 0)),
      };
    },
    stored: async () => {
      let bytes = 0;
      let items = 0;
      for (const node of nodes) {
        bytes += Number((await info(node.admin, 'memory')).get('used_memory') ?? 0);
        items += await node.admin.dbsize();
      }
      return { bytes, items };
    },
    dispose: async () => {
      for (const node of nodes) node.admin.disconnect();
      await stop();
    },
  };
}

export async function redisProbe(): Promise<Probe> {
  // AOF with appendfsync always: the adapter's default `aof` level. No automatic rewrite,
  // so the AOF's size only grows by what the run writes.
  const server = await RedisServerProcess.start({
    persistence: 'aof-always',
    args: ['--auto-aof-rewrite-percentage', '0'],
  });
  const admin = new Redis(server.url);
  return redisProbeOf(
    'redis',
    `one redis-server ${(await info(admin, 'server')).get('redis_version')} (AOF, appendfsync always), 4 connections per adapter`,
    [{ admin, pid: server.pid }],
    () => redisAdapter({ url: server.url, keyPrefix: 'capacity' }),
    () => server.dispose(),
  );
}

export async function redisClusterProbe(): Promise<Probe> {
  const cluster = await RedisClusterProcesses.start({ masters: 3, persistence: 'aof-always' });
  const nodes = cluster.nodes.map((node) => ({ admin: new Redis(node.url), pid: node.pid }));
  for (const node of nodes) await node.admin.config('SET', 'auto-aof-rewrite-percentage', '0');
  return redisProbeOf(
    'redis-cluster',
    'a Redis Cluster of 3 masters, no replicas (AOF, appendfsync always on each)',
    nodes,
    () => redisAdapter({ clusterNodes: cluster.seeds, keyPrefix: 'capacity' }),
    () => cluster.dispose(),
  );
}

/** Requests a client sends, by command, and the bytes of the bodies it PUTs. */
function countRequests(client: S3Client, counts: Map<string, number>, bytes: { put: number }) {
  client.middlewareStack.add(
    ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
      (args: { input?: { Body?: unknown } }) => {
        const name = (context.commandName ?? 'unknown').replace(/Command$/, '');
        counts.set(name, (counts.get(name) ?? 0) + 1);
        const body = args.input?.Body;
        if (typeof body === 'string') bytes.put += Buffer.byteLength(body);
        else if (body instanceof Uint8Array) bytes.put += body.byteLength;
        return next(args);
      }) as never,
    { step: 'initialize', name: 'keepsakeCapacityCounter' } as never,
  );
}

/** Pids of the Ceph daemons whose command line names the cluster's directory. */
async function cephPids(directory: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (commandLine.includes(directory)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

export async function s3Probe(batchWindowMs: number): Promise<Probe> {
  const target: S3Target = await startS3Target({
    env: process.env,
    containerEngine: containerEngineAvailable(),
  });
  const counts = new Map<string, number>();
  const bytes = { put: 0 };
  const clients: S3Client[] = [];
  const quiet = new S3Client(testClientConfig(target));
  const directory = target.cluster?.directory ?? null;
  const pids = directory === null ? [] : await cephPids(directory);
  const prefix = 'capacity';
  return {
    backend: 's3',
    description: `Ceph RGW (${target.kind}, memstore OSD) on loopback; journal durability terminal, batchWindowMs ${batchWindowMs}`,
    countsAre: 'requests the adapters sent, by command (SDK middleware)',
    bytesWrittenAre: 'bytes of PutObject bodies',
    storedAre: 'object bytes and objects under the prefix (ListObjectsV2)',
    journal: { durability: 'terminal' },
    adapter: () => {
      // One client per adapter, as two server instances would have; both counted. A client
      // passed in means no owner lease (its cost is derived from the option, not counted).
      const client = new S3Client(testClientConfig(target));
      countRequests(client, counts, bytes);
      clients.push(client);
      return s3Adapter({
        client,
        bucket: target.bucket,
        prefix,
        compatibility: target.compatibility,
        journal: { batchWindowMs },
      });
    },
    snapshot: async () => {
      let cpu = 0;
      for (const pid of pids) cpu += await processCpuMicros(pid);
      return {
        counts: { ...Object.fromEntries(counts) },
        bytesWritten: bytes.put,
        serverCpuMicros: pids.length > 0 ? cpu : null,
        pageBytes: null,
        countsByNode: [],
      };
    },
    stored: async () => {
      let total = 0;
      let items = 0;
      let token: string | undefined;
      do {
        const page = await quiet.send(
          new ListObjectsV2Command({
            Bucket: target.bucket,
            Prefix: `${prefix}/`,
            ContinuationToken: token,
          }),
        );
        for (const object of page.Contents ?? []) {
          total += object.Size ?? 0;
          items++;
        }
        token = page.NextContinuationToken;
      } while (token !== undefined);
      return { bytes: total, items };
    },
    dispose: async () => {
      for (const client of clients) client.destroy();
      quiet.destroy();
      await target.dispose();
    },
  };
}
