import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cephConfig, GATEWAY_NAME } from './ceph-config.js';
import { Daemon, runTool } from './daemon.js';
import { freePort } from './free-port.js';

export interface CephClusterOptions {
  /**
   * Memory the OSD may hold (memstore), in bytes. Test data is small and deleted objects
   * are freed at once.
   * @default 1 GiB
   */
  storeBytes?: number;
  /** How long start-up may take before it fails. @default 120_000 */
  startTimeoutMs?: number;
}

/** Credentials of the S3 user the harness creates. */
export interface S3TestCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/**
 * A throwaway single-node Ceph cluster with a RADOS Gateway, started by this process from
 * Debian's packages (ceph-mon, ceph-osd, radosgw, ceph-common), all on 127.0.0.1 in a temp
 * directory: one monitor, one OSD on `memstore` (in memory: nothing survives the OSD), no
 * manager, every daemon in the foreground (`-f`) and stopped by its pid. Nothing is cached
 * outside the temp directory, which `dispose()` removes.
 *
 * Start-up (measured on 2 cores): about 1 to 3 seconds, most of it `ceph osd new` and the
 * pools radosgw-admin creates.
 */
export class CephCluster {
  readonly host = '127.0.0.1';
  readonly credentials: S3TestCredentials;
  /** Milliseconds `start()` took, for the report. */
  startupMs = 0;
  private readonly monitor: Daemon;
  private readonly osd: Daemon;
  private readonly gateway: Daemon;

  readonly directory: string;
  readonly monitorPort: number;
  readonly gatewayPort: number;

  private constructor(directory: string, monitorPort: number, gatewayPort: number) {
    this.directory = directory;
    this.monitorPort = monitorPort;
    this.gatewayPort = gatewayPort;
    const config = this.configFile;
    this.credentials = {
      accessKeyId: `KEEPSAKE${randomBytes(6).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(24).toString('base64url'),
    };
    this.monitor = new Daemon('ceph-mon', 'ceph-mon', ['-f', '-i', 'a', '-c', config]);
    this.osd = new Daemon('ceph-osd', 'ceph-osd', ['-f', '-i', '0', '-c', config]);
    this.gateway = new Daemon('radosgw', 'radosgw', ['-f', '-n', GATEWAY_NAME, '-c', config]);
  }

  static async start(options: CephClusterOptions = {}): Promise<CephCluster> {
    const started = performance.now();
    const directory = await mkdtemp(join(tmpdir(), 'keepsake-ceph-'));
    const [monitorPort, gatewayPort] = [await freePort(), await freePort()];
    const cluster = new CephCluster(directory, monitorPort, gatewayPort);
    const timeoutMs = options.startTimeoutMs ?? 120_000;
    try {
      await withTimeout(cluster.bringUp(options.storeBytes ?? 1024 ** 3), timeoutMs, () =>
        cluster.describe(),
      );
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    cluster.startupMs = Math.round(performance.now() - started);
    return cluster;
  }

  get configFile(): string {
    return join(this.directory, 'ceph.conf');
  }

  /** The S3 endpoint (path-style). */
  get endpoint(): string {
    return `http://${this.host}:${this.gatewayPort}`;
  }

  /** Pids of the three daemons (null for one not running). */
  get pids(): { monitor: number | null; osd: number | null; gateway: number | null } {
    return { monitor: this.monitor.pid, osd: this.osd.pid, gateway: this.gateway.pid };
  }

  private async bringUp(storeBytes: number): Promise<void> {
    const { directory, configFile } = this;
    const fsid = randomUUID();
    for (const name of ['run', 'log', 'mon.a', 'osd.0', 'rgw']) {
      await mkdir(join(directory, name), { recursive: true });
    }
    await writeFile(
      configFile,
      cephConfig({
        fsid,
        directory,
        monitorPort: this.monitorPort,
        gatewayPort: this.gatewayPort,
        storeBytes,
      }),
    );
    const keyring = join(directory, 'keyring');
    const monmap = join(directory, 'monmap');
    await runTool('ceph-authtool', [
      ...['--create-keyring', keyring, '--gen-key', '-n', 'mon.'],
      ...['--cap', 'mon', 'allow *'],
    ]);
    await runTool('monmaptool', [
      ...['--create', '--addv', 'a', `[v2:127.0.0.1:${this.monitorPort}]`],
      ...['--fsid', fsid, monmap],
    ]);
    await runTool('ceph-mon', [
      ...['--mkfs', '-i', 'a', '--monmap', monmap, '-c', configFile, '--keyring', keyring],
    ]);
    await this.monitor.start();
    const osdUuid = randomUUID();
    // The OSD's id comes from the monitor (`osd new`); the CLI waits for the monitor.
    const osdId = (
      await Promise.race([
        runTool('ceph', ['-c', configFile, '--connect-timeout', '30', 'osd', 'new', osdUuid]),
        this.monitor.exited(),
      ])
    ).trim();
    if (osdId !== '0') throw new Error(`ceph osd new gave id ${JSON.stringify(osdId)}, not 0`);
    await runTool('ceph-osd', ['-i', '0', '--mkfs', '--osd-uuid', osdUuid, '-c', configFile]);
    await this.osd.start();
    // Creates radosgw's pools (waiting for the OSD to take them), then the user.
    await Promise.race([
      runTool(
        'radosgw-admin',
        [
          ...['-c', configFile, 'user', 'create', '--uid', 'keepsake-test'],
          ...['--display-name', 'keepsake test', '--access-key', this.credentials.accessKeyId],
          ...['--secret', this.credentials.secretAccessKey],
        ],
        90_000,
      ),
      this.osd.exited(),
      this.monitor.exited(),
    ]);
    await this.startGateway();
  }

  /** Starts radosgw and resolves once it answers HTTP. */
  private async startGateway(): Promise<void> {
    await this.gateway.start();
    await Promise.race([this.untilGatewayAnswers(), this.gateway.exited()]);
  }

  private async untilGatewayAnswers(): Promise<void> {
    for (;;) {
      if (await answers(this.host, this.gatewayPort)) return;
      if (!this.gateway.running) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * SIGKILLs radosgw and starts it again: a crash of the S3 server process. What it
   * acknowledged is in RADOS (the OSD), so it must all be there after the restart.
   */
  async crashAndRestartGateway(): Promise<void> {
    await this.gateway.kill();
    await this.startGateway();
  }

  /** SIGKILLs radosgw (requests fail with connection refused until `restartGateway`). */
  async killGateway(): Promise<void> {
    await this.gateway.kill();
  }

  async restartGateway(): Promise<void> {
    await this.startGateway();
  }

  /** What the daemons printed and where their logs are, for a failure message. */
  describe(): string {
    return [
      `ceph test cluster in ${this.directory} (logs in log/)`,
      ...[this.monitor, this.osd, this.gateway].map(
        (daemon) => `${daemon.label} pid ${daemon.pid ?? '-'}: ${daemon.log().slice(-1500)}`,
      ),
    ].join('\n');
  }

  /** Stops every daemon by its pid (SIGKILL: the data is not needed) and removes the directory. */
  async dispose(): Promise<void> {
    await this.gateway.kill();
    await this.osd.kill();
    await this.monitor.kill();
    await rm(this.directory, { recursive: true, force: true });
  }
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = request({ host, port, path: '/', method: 'GET', timeout: 1000 }, (response) => {
      response.resume();
      resolve(response.statusCode !== undefined);
    });
    probe.on('error', () => resolve(false));
    probe.on('timeout', () => {
      probe.destroy();
      resolve(false);
    });
    probe.end();
  });
}

async function withTimeout<T>(work: Promise<T>, ms: number, describe: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the Ceph test cluster did not start within ${ms} ms\n${describe()}`)),
      ms,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
