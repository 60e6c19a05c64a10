import { execFile } from 'node:child_process';
import { open, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MachineInfo {
  readonly cpuCount: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly platform: string;
  readonly kernel: string;
  readonly node: string;
  /** libuv's thread pool runs every file call: its size caps the fsyncs in flight. */
  readonly threadPoolSize: number;
  /** Filesystem type and device of the scratch directory, e.g. "ext4 on /dev/vda". */
  readonly filesystem: string;
  /** Load average over one minute when the run started: other work competing for the cores. */
  readonly loadAverage: number;
  /** The disk's own limit: 1 KiB appends to one file, each followed by fdatasync. */
  readonly fdatasyncPerSecond: number;
}

export async function describeMachine(scratchDirectory: string): Promise<MachineInfo> {
  const cpus = os.cpus();
  return {
    cpuCount: os.availableParallelism(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    node: process.version,
    threadPoolSize: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
    filesystem: await filesystemOf(scratchDirectory),
    loadAverage: os.loadavg()[0] ?? 0,
    fdatasyncPerSecond: await measureFdatasyncRate(scratchDirectory),
  };
}

/** `df -PT` names the type (ext4, xfs, btrfs, tmpfs…); `stat -f` is the fallback elsewhere. */
async function filesystemOf(directory: string): Promise<string> {
  try {
    const { stdout } = await run('df', ['-PT', directory]);
    const fields = stdout.trim().split('\n').at(-1)?.split(/\s+/) ?? [];
    if (fields.length >= 7) return `${fields[1]} on ${fields[0]} (mounted at ${fields.at(-1)})`;
  } catch {
    // Not GNU df: try stat below.
  }
  try {
    const { stdout } = await run('stat', ['-f', '-c', '%T', directory]);
    return stdout.trim();
  } catch {
    return 'unknown';
  }
}

/** About one second of 1 KiB appends with one fdatasync each: what one stream can do at best. */
async function measureFdatasyncRate(directory: string): Promise<number> {
  const path = join(directory, `fdatasync-probe-${process.pid}.log`);
  const handle = await open(path, 'w');
  const record = Buffer.alloc(1024, 0x61);
  try {
    let count = 0;
    const started = performance.now();
    while (performance.now() - started < 1000) {
      await handle.write(record);
      await handle.datasync();
      count++;
    }
    return Math.round((count * 1000) / (performance.now() - started));
  } finally {
    await handle.close();
    await rm(path, { force: true });
  }
}
