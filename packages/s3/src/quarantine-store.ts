import { randomBytes } from 'node:crypto';
import type { Collection, QuarantinedDocument } from '@keepsake/core';
import { inBatches } from './in-batches.js';
import type { StorageContext } from './storage-context.js';

const REASON_METADATA = 'keepsake-reason';
const AT_METADATA = 'keepsake-quarantined-at';

/**
 * A2: a document that does not parse is copied, server-side and byte for byte, to
 * `quarantine/<collection>/<id>/<time>-<nonce>` with the reason in its metadata, then
 * deleted (two requests). The location reported is that key.
 */
export class QuarantineStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async quarantine(collection: Collection, id: string, reason: string): Promise<string> {
    const { requests, keys } = this.context;
    const now = Date.now();
    const location = keys.quarantined(
      collection,
      id,
      `${String(now).padStart(15, '0')}-${randomBytes(4).toString('hex')}`,
    );
    const copied = await requests.copy(
      keys.document(collection, id),
      location,
      // Metadata is sent as HTTP headers: keep the reason to printable ASCII.
      { [REASON_METADATA]: encodeURIComponent(reason).slice(0, 1500), [AT_METADATA]: String(now) },
      'quarantine a document',
    );
    if (copied) await requests.delete(keys.document(collection, id), 'quarantine a document');
    return location;
  }

  async list(): Promise<QuarantinedDocument[]> {
    const { requests, keys } = this.context;
    const objects = await requests.listAll(keys.quarantine, 'list quarantined documents');
    // Only keys of a quarantined copy's shape: a nested prefix `<prefix>/quarantine/…`
    // lives under the same folder, and its keys are not this store's (H1).
    const copies = objects.flatMap((object) => {
      const parsed = keys.parseQuarantined(object.key);
      return parsed === null ? [] : [{ ...parsed, object }];
    });
    const documents = await inBatches(copies, 16, async ({ collection, id, object }) => {
      const info = await requests.head(object.key, 'list quarantined documents');
      if (info === null) return null;
      const at = Number(info.metadata[AT_METADATA]);
      return {
        collection,
        id,
        location: object.key,
        reason: safeDecode(info.metadata[REASON_METADATA] ?? ''),
        quarantinedAt: Number.isFinite(at) ? at : object.lastModified,
      } satisfies QuarantinedDocument;
    });
    return documents.filter((document) => document !== null);
  }

  /** Null for a location that is not a quarantined copy of this prefix (H1). */
  async read(location: string): Promise<string | null> {
    if (this.context.keys.parseQuarantined(location) === null) return null;
    const read = await this.context.requests.get(location, 'read quarantined bytes');
    return read?.body ?? null;
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
