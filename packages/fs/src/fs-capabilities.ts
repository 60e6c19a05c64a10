import type { AdapterCapabilities } from '@keepsake/core';

export const fsCapabilities: AdapterCapabilities = Object.freeze({
  durability: 'fsync',
  conditionalWrites: true,
  sharedAcrossProcesses: true,
  appendDeltas: true,
  nativeAppend: true,
  groupCommit: true,
  clusterSafeKeys: false,
  indexWithDocument: true,
  gaps: Object.freeze([]),
});
