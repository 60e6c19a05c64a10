import { ReadOnlyError, type StorageAdapterV1 } from '@keepsake/core';

/**
 * `readOnly: true`: every write primitive of `adapter` rejects with `ReadOnlyError` before a
 * command is sent (own properties in front of the class's methods); reads, `open()`,
 * `sync()` (nothing to confirm) and `close()` are the adapter's own.
 */
export function refuseWrites<T extends StorageAdapterV1>(adapter: T, owner: string): T {
  const refuse = (operation: string) => Promise.reject(new ReadOnlyError(owner, operation));
  const refusals: Partial<StorageAdapterV1> = {
    putDocument: (collection, id) => refuse(`write ${collection}/${id}`),
    deleteDocument: (collection, id) => refuse(`delete ${collection}/${id}`),
    quarantineDocument: (collection, id) => refuse(`quarantine ${collection}/${id}`),
    putIndexEntry: () => refuse('write the index'),
    deleteIndexEntry: () => refuse('write the index'),
    replaceIndex: () => refuse('replace the index'),
    appendLog: (sessionId, runId) => refuse(`append to journal ${sessionId}/${runId}`),
    deleteLogs: (sessionId) => refuse(`delete journals of ${sessionId}`),
    deleteLog: (sessionId, runId) => refuse(`delete journal ${sessionId}/${runId}`),
    sync: async () => undefined,
  };
  return Object.assign(adapter, refusals);
}
