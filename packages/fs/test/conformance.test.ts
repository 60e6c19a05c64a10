import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runConformance } from '@keepsake/conformance';
import { fsAdapter } from '../src/index.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';
import { ROOT_ENV } from './conformance-child.js';

// 1. The plain adapter on the real filesystem: one subdirectory per namespace of one temp
//    directory, so a second adapter on the same namespace is a restart on the same data.
//    Real second processes (H1, E2's process kills) open it through conformance-child.ts.
let root = '';

runConformance({
  name: 'fs',
  initializerModule: fileURLToPath(new URL('./conformance-child.ts', import.meta.url)),
  async setup() {
    root = await mkdtemp(join(tmpdir(), 'keepsake-fs-conformance-'));
    process.env[ROOT_ENV] = root;
  },
  async teardown() {
    delete process.env[ROOT_ENV];
    await rm(root, { recursive: true, force: true });
  },
  async createAdapter(namespace) {
    return fsAdapter({ directory: join(root, namespace) });
  },
  // A store the suite abandoned (a simulated crash) never closed its adapter: its open
  // files would be left to the garbage collector (DEP0137). The test is over; close them.
  async destroyAdapter(adapter) {
    await adapter.close().catch(() => undefined);
  },
  // B7: the index's files are gone (deleted by hand, or lost): open() must not start afresh.
  async removeIndex(namespace) {
    await rm(join(root, namespace, 'index'), { recursive: true, force: true });
  },
});

// 2. The same adapter over the FAULT-INJECTING filesystem: one simulated disk per namespace,
//    and `simulateCrash` is a power loss that drops every unsynced byte and directory entry.
//    The restart tests then prove that nothing fsynced is lost and nothing unsynced corrupts.
const disks = new Map<string, FaultInjectingFileSystem>();

runConformance({
  name: 'fs (power-loss simulation)',
  async teardown() {
    disks.clear();
  },
  async createAdapter(namespace) {
    let disk = disks.get(namespace);
    if (!disk) {
      disk = faultInjectingFileSystem();
      disks.set(namespace, disk);
    }
    return fsAdapter({ directory: '/keepsake', fileSystem: disk });
  },
  async simulateCrash(namespace) {
    disks.get(namespace)?.simulatePowerLoss({ tornTails: true });
  },
  async removeIndex(namespace) {
    const disk = disks.get(namespace);
    if (disk !== undefined) await removeTree(disk, '/keepsake/index');
  },
  // Fault injection for the model-based section and B2's retryability tests: the next write
  // under the index (or the next open under the sessions) fails with EIO, as a flaky disk
  // would (B3, B7), or with EACCES, a permission error no retry gets past.
  backendFaultKinds: ['transient', 'permanent'],
  injectBackendFault(namespace, target, kind = 'transient') {
    const disk = disks.get(namespace);
    if (disk === undefined) return null;
    const code = kind === 'transient' ? 'EIO' : 'EACCES';
    disk.inject(
      target === 'index'
        ? { operation: 'write', path: '/keepsake/index/', code, times: 1 }
        : { operation: 'open', path: '/keepsake/sessions/', code, times: 1 },
    );
    return () => disk.clearFaults();
  },
});

/** rm -r on the simulated disk (it has no recursive remove of its own). */
async function removeTree(disk: FaultInjectingFileSystem, path: string): Promise<void> {
  const stats = await disk.lstat(path).catch(() => null);
  if (stats === null) return;
  if (!stats.isDirectory()) {
    await disk.unlink(path);
    return;
  }
  for (const name of await disk.readdir(path)) await removeTree(disk, `${path}/${name}`);
  await disk.rmdir(path);
}
