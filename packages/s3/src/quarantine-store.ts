import { randomBytes } from 'node:crypto';
import {
  COLLECTIONS as CORE_COLLECTIONS,
  type Collection,
  type QuarantinedDocument,
} from '@keepsake/core';
import { inBatches } from './in-batches.js';
import type { StorageContext } from './storage-context.js';

/** Every collection core knows: a quarantined document of any of them is listed. */
const COLLECTIONS: ReadonlySet<string> = new Set(CORE_COLLECTIONS);
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
    const documents = await inBatches(objects, 16, async (object) => {
      const [collection, id] = object.key.slice(keys.quarantine.length).split('/');
      if (collection === undefined || id === undefined || !COLLECTIONS.has(collection)) return null;
      const info = await requests.head(object.key, 'list quarantined documents');
      if (info === null) return null;
      const at = Number(info.metadata[AT_METADATA]);
      return {
        collection: collection as Collection,
        id,
        location: object.key,
        reason: safeDecode(info.metadata[REASON_METADATA] ?? ''),
        quarantinedAt: Number.isFinite(at) ? at : object.lastModified,
      } satisfies QuarantinedDocument;
    });
    return documents.filter((document) => document !== null);
  }

  async read(location: string): Promise<string | null> {
    if (!location.startsWith(this.context.keys.quarantine)) return null;
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
