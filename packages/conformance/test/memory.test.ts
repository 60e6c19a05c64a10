import { createMemoryBackend, type MemoryBackend, memoryAdapter } from '@keepsake/core';
import { runConformance } from '../src/index.js';

const backends = new Map<string, MemoryBackend>();

// The in-memory reference adapter: adapters created with the same namespace share one
// backend, which is how the suite "restarts" onto the same data.
runConformance({
  name: 'memory',
  async createAdapter(namespace) {
    let backend = backends.get(namespace);
    if (backend === undefined) {
      backend = createMemoryBackend();
      backends.set(namespace, backend);
    }
    return memoryAdapter({ backend });
  },
  async teardown() {
    backends.clear();
  },
  // B7: the index is gone (null), as a lost index file is on fs.
  async removeIndex(namespace) {
    const backend = backends.get(namespace);
    if (backend !== undefined) backend.index = null;
  },
});
