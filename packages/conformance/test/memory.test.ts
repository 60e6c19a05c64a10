import { dropMemoryNamespace, memoryAdapter } from '@keepsake/core';
import { runConformance } from '../src/index.js';

const namespaces = new Set<string>();

// The in-memory reference adapter: adapters created with the same namespace share one
// backend, which is how the suite "restarts" onto the same data.
runConformance({
  name: 'memory',
  async createAdapter(namespace) {
    namespaces.add(namespace);
    return memoryAdapter({ namespace });
  },
  async teardown() {
    for (const namespace of namespaces) dropMemoryNamespace(namespace);
  },
});
