/**
 * The second process's view of the `shared-claim-in-process-only` mutant: a plain
 * in-memory adapter, so what the first process stored is not there. Imports nothing
 * relative, so plain `node` runs it (Node 24 strips the types).
 */
import { memoryAdapter } from '@keepsake/core';

export default {
  name: 'mutant:shared-claim-in-process-only (second process)',
  createAdapter: async (namespace: string) => memoryAdapter({ namespace }),
};
