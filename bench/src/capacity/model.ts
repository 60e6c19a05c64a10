/**
 * The capacity model of docs/scaling.md: pure arithmetic, no I/O. A measured run gives unit
 * costs (per turn, per remote follower and second, per stored session); a load (concurrent
 * streams, stored sessions, remote followers, processes) times those costs gives the figures
 * a deployment must carry; assumptions stated by the caller (core budgets, memory per shard,
 * prices) turn them into a sizing. Nothing here is a measurement: every input is.
 */

/** Counters of one backend, by name (Redis commands, S3 requests, fs calls). */
export type Counts = Readonly<Record<string, number>>;

/** What one stretch of a run measured: deltas between two snapshots. */
export interface WindowMeasurement {
  readonly streams: number;
  readonly followers: number;
  readonly seconds: number;
  /**
   * Turns done inside the window: token appends that resolved in it ÷ tokens per turn (turn
   * equivalents, so a turn that straddles an edge counts for its share, not 0 or 1).
   */
  readonly turns: number;
  /** Token appends that resolved inside the window. */
  readonly tokens: number;
  /** Mean wall time of those turns, from the refresh load to `complete()`. */
  readonly meanTurnMs: number;
  readonly counts: Counts;
  /** Bytes the backend wrote (fs: this process's `write_bytes`; Redis: AOF growth; S3: PUT bodies). */
  readonly bytesWritten: number;
  /** This process's CPU (user + system, every thread). */
  readonly nodeCpuMicros: number;
  /** The backend servers' CPU (redis-server, radosgw + ceph-osd), null where not measured. */
  readonly serverCpuMicros: number | null;
  /** Growth of what the backend stores (fs: disk usage; Redis: used_memory; S3: object bytes). */
  readonly storedBytesGrowth: number;
}

/** What storing sessions measured: how much the backend holds after it. */
export interface StorageMeasurement {
  readonly sessions: number;
  readonly bytes: number;
  /** Files, keys or objects. */
  readonly items: number;
}

export interface UnitCosts {
  /** Wall time of one turn at the workload's pace (sets turns per second per stream). */
  readonly turnMs: number;
  readonly perTurn: {
    readonly counts: Counts;
    readonly bytesWritten: number;
    readonly nodeCpuMicros: number;
    readonly serverCpuMicros: number | null;
    /** Bytes a turn leaves stored (journal, grown transcript), beyond its session's. */
    readonly storedBytes: number;
  };
  /** A follower on another instance, per second it follows (above what the turns cost). */
  readonly perFollowerSecond: {
    readonly counts: Counts;
    readonly nodeCpuMicros: number;
    readonly serverCpuMicros: number | null;
  };
  readonly perSession: { readonly bytes: number; readonly items: number };
}

export interface Load {
  readonly streams: number;
  readonly storedSessions: number;
  /** Followers on another instance than the run's (SSE clients that reconnected elsewhere). */
  readonly followers: number;
}

export interface Prediction {
  readonly turnsPerSecond: number;
  readonly countsPerSecond: Counts;
  /** Sum of `countsPerSecond`. */
  readonly operationsPerSecond: number;
  readonly bytesWrittenPerSecond: number;
  /** Cores of Node (store work only: no HTTP, no SSE, no model client). */
  readonly nodeCores: number;
  readonly serverCores: number | null;
  readonly storedBytes: number;
  readonly storedItems: number;
  /** Stored growth per second from the turns (journals, transcripts). */
  readonly storedBytesGrowthPerSecond: number;
}

/** Sum of a set of counts. */
export function total(counts: Counts): number {
  let sum = 0;
  for (const value of Object.values(counts)) sum += value;
  return sum;
}

/** `left + factor * right`, name by name. */
export function addScaled(left: Counts, right: Counts, factor: number): Record<string, number> {
  const sum: Record<string, number> = { ...left };
  for (const [name, value] of Object.entries(right)) sum[name] = (sum[name] ?? 0) + factor * value;
  return sum;
}

/** Each count times `factor`. */
export function scale(counts: Counts, factor: number): Record<string, number> {
  return addScaled({}, counts, factor);
}

/**
 * Unit costs from a calibration: `plain` (streams, no remote followers), `followed` (the
 * same streams, some followed from another store) and the storage of the stored sessions.
 * A follower's cost is what `followed` spent beyond its turns at `plain`'s cost per turn,
 * per follower and second.
 */
export function unitCosts(
  plain: WindowMeasurement,
  followed: WindowMeasurement,
  storage: StorageMeasurement,
): UnitCosts {
  if (plain.turns <= 0) throw new Error('the calibration completed no turn');
  const perTurnCounts = scale(plain.counts, 1 / plain.turns);
  const serverPerTurn = plain.serverCpuMicros === null ? null : plain.serverCpuMicros / plain.turns;
  const followerSeconds = followed.followers * followed.seconds;
  const perFollower = (measured: number, perTurn: number) =>
    followerSeconds > 0 ? (measured - followed.turns * perTurn) / followerSeconds : 0;
  const followerCounts: Record<string, number> = {};
  for (const name of new Set([...Object.keys(followed.counts), ...Object.keys(perTurnCounts)])) {
    followerCounts[name] = perFollower(followed.counts[name] ?? 0, perTurnCounts[name] ?? 0);
  }
  return {
    turnMs: plain.meanTurnMs,
    perTurn: {
      counts: perTurnCounts,
      bytesWritten: plain.bytesWritten / plain.turns,
      nodeCpuMicros: plain.nodeCpuMicros / plain.turns,
      serverCpuMicros: serverPerTurn,
      storedBytes: plain.storedBytesGrowth / plain.turns,
    },
    perFollowerSecond: {
      counts: followerCounts,
      nodeCpuMicros: perFollower(followed.nodeCpuMicros, plain.nodeCpuMicros / plain.turns),
      serverCpuMicros:
        serverPerTurn === null || followed.serverCpuMicros === null
          ? null
          : perFollower(followed.serverCpuMicros, serverPerTurn),
    },
    perSession: {
      bytes: storage.sessions > 0 ? storage.bytes / storage.sessions : 0,
      items: storage.sessions > 0 ? storage.items / storage.sessions : 0,
    },
  };
}

/**
 * Unit costs re-measured on a larger window (the check run): its turns' costs, once the
 * followers' share (at the calibration's cost per follower and second) is taken out, and its
 * stored sessions' bytes. What the full-scale sizing uses: more turns, nearer that scale.
 */
export function refine(
  costs: UnitCosts,
  window: WindowMeasurement,
  storage: StorageMeasurement,
): UnitCosts {
  if (window.turns <= 0) throw new Error('the window completed no turn');
  const followerSeconds = window.followers * window.seconds;
  const turnsOnly = addScaled(window.counts, costs.perFollowerSecond.counts, -followerSeconds);
  const serverFollower = costs.perFollowerSecond.serverCpuMicros ?? 0;
  return {
    ...costs,
    turnMs: window.meanTurnMs,
    perTurn: {
      counts: scale(turnsOnly, 1 / window.turns),
      bytesWritten: window.bytesWritten / window.turns,
      nodeCpuMicros:
        (window.nodeCpuMicros - followerSeconds * costs.perFollowerSecond.nodeCpuMicros) /
        window.turns,
      serverCpuMicros:
        window.serverCpuMicros === null
          ? null
          : (window.serverCpuMicros - followerSeconds * serverFollower) / window.turns,
      storedBytes: window.storedBytesGrowth / window.turns,
    },
    perSession: {
      bytes: storage.sessions > 0 ? storage.bytes / storage.sessions : costs.perSession.bytes,
      items: storage.sessions > 0 ? storage.items / storage.sessions : costs.perSession.items,
    },
  };
}

/**
 * What a load costs per second, by the unit costs: each stream runs turns back to back at
 * the workload's pace (so turns per second = streams / turn time), each follower reads its
 * run as the calibration's did, and every stored session holds its bytes.
 */
export function predict(costs: UnitCosts, load: Load, turnsAt?: number): Prediction {
  // `turnsAt`: the turn rate a run actually reached, to check the costs apart from the pace.
  const turnsPerSecond = turnsAt ?? load.streams / (costs.turnMs / 1_000);
  const countsPerSecond = addScaled(
    scale(costs.perTurn.counts, turnsPerSecond),
    costs.perFollowerSecond.counts,
    load.followers,
  );
  const serverTurn = costs.perTurn.serverCpuMicros;
  const serverFollower = costs.perFollowerSecond.serverCpuMicros;
  return {
    turnsPerSecond,
    countsPerSecond,
    operationsPerSecond: total(countsPerSecond),
    bytesWrittenPerSecond: turnsPerSecond * costs.perTurn.bytesWritten,
    nodeCores:
      (turnsPerSecond * costs.perTurn.nodeCpuMicros +
        load.followers * costs.perFollowerSecond.nodeCpuMicros) /
      1_000_000,
    serverCores:
      serverTurn === null
        ? null
        : (turnsPerSecond * serverTurn + load.followers * (serverFollower ?? 0)) / 1_000_000,
    storedBytes: load.storedSessions * costs.perSession.bytes,
    storedItems: load.storedSessions * costs.perSession.items,
    storedBytesGrowthPerSecond: turnsPerSecond * costs.perTurn.storedBytes,
  };
}

/** What a window measured, in the units of a prediction (per second, cores). */
export function observed(
  window: WindowMeasurement,
  storage: StorageMeasurement,
): Omit<Prediction, 'storedBytesGrowthPerSecond'> & { storedBytesGrowthPerSecond: number } {
  const perSecond = 1 / window.seconds;
  return {
    turnsPerSecond: window.turns * perSecond,
    countsPerSecond: scale(window.counts, perSecond),
    operationsPerSecond: total(window.counts) * perSecond,
    bytesWrittenPerSecond: window.bytesWritten * perSecond,
    nodeCores: (window.nodeCpuMicros * perSecond) / 1_000_000,
    serverCores:
      window.serverCpuMicros === null ? null : (window.serverCpuMicros * perSecond) / 1_000_000,
    storedBytes: storage.bytes,
    storedItems: storage.items,
    storedBytesGrowthPerSecond: window.storedBytesGrowth * perSecond,
  };
}

/** Choices a sizing rests on: stated by whoever sizes, none of them measured. */
export interface SizingAssumptions {
  /** Share of one core a Node process may fill (its one JavaScript thread). */
  readonly nodeCoreBudget: number;
  /** Node CPU of the HTTP server per turn, as a multiple of the store's (1: store only). */
  readonly httpCpuFactor: number;
  /** Share of one core a Redis shard's main thread may fill. */
  readonly redisCoreBudget: number;
  /** Dataset bytes one Redis shard may hold. */
  readonly redisMemoryPerShard: number;
  /**
   * How long turns' stored growth (journals are kept until their session is deleted) is
   * counted in the Redis memory sizing, in seconds.
   */
  readonly retainedGrowthSeconds: number;
  /** Owner-lease PUTs per S3 adapter instance per second (`ownerLease.renewIntervalMs`). */
  readonly s3LeasePutsPerSecond: number;
  /** S3 adapter instances per server process (the reference server: one per namespace). */
  readonly s3AdaptersPerProcess: number;
  /** Price per 1,000 requests, by request name; a request not named costs `defaultPrice`. */
  readonly pricePerThousand: Readonly<Record<string, number>>;
  readonly defaultPricePerThousand: number;
}

export const SECONDS_PER_MONTH = 30 * 24 * 3_600;

export interface Sizing {
  /** Server processes by Node CPU (store work times `httpCpuFactor`). */
  readonly instances: number;
  readonly redisShardsByCpu: number | null;
  readonly redisShardsByMemory: number | null;
  /** The same with `retainedGrowthSeconds` of turns' growth on top of the sessions. */
  readonly redisShardsByMemoryWithGrowth: number | null;
  /** Requests per second with the instances' owner leases, and per 30-day month. */
  readonly requestsPerSecond: number;
  readonly requestsPerMonth: number;
  readonly requestCostPerMonth: number;
}

/** Turns a prediction into instances, shards and request rates under stated assumptions. */
export function size(
  prediction: Prediction,
  assumptions: SizingAssumptions,
  backend: 'fs' | 'redis' | 's3',
): Sizing {
  const instances = Math.max(
    1,
    Math.ceil((prediction.nodeCores * assumptions.httpCpuFactor) / assumptions.nodeCoreBudget),
  );
  const leases =
    backend === 's3'
      ? instances * assumptions.s3AdaptersPerProcess * assumptions.s3LeasePutsPerSecond
      : 0;
  const requests =
    backend === 's3'
      ? addScaled(prediction.countsPerSecond, { PutObject: leases }, 1)
      : prediction.countsPerSecond;
  let costPerSecond = 0;
  for (const [name, perSecond] of Object.entries(requests)) {
    const price = assumptions.pricePerThousand[name] ?? assumptions.defaultPricePerThousand;
    costPerSecond += (perSecond / 1_000) * price;
  }
  const requestsPerSecond = total(requests);
  return {
    instances,
    redisShardsByCpu:
      backend === 'redis' && prediction.serverCores !== null
        ? Math.max(1, Math.ceil(prediction.serverCores / assumptions.redisCoreBudget))
        : null,
    redisShardsByMemory:
      backend === 'redis'
        ? Math.max(1, Math.ceil(prediction.storedBytes / assumptions.redisMemoryPerShard))
        : null,
    redisShardsByMemoryWithGrowth:
      backend === 'redis'
        ? Math.max(
            1,
            Math.ceil(
              (prediction.storedBytes +
                prediction.storedBytesGrowthPerSecond * assumptions.retainedGrowthSeconds) /
                assumptions.redisMemoryPerShard,
            ),
          )
        : null,
    requestsPerSecond,
    requestsPerMonth: requestsPerSecond * SECONDS_PER_MONTH,
    requestCostPerMonth: backend === 's3' ? costPerSecond * SECONDS_PER_MONTH : 0,
  };
}

/** Measured ÷ predicted, or null when there is nothing to divide by. */
export function ratio(measured: number | null, predicted: number | null): number | null {
  if (measured === null || predicted === null || predicted === 0) return null;
  return measured / predicted;
}
