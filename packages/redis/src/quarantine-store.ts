import { randomBytes } from 'node:crypto';
import type { Collection, QuarantinedDocument } from '@keepsake/core';
import { parseDocument } from './document-format.js';
import { quarantineDocumentScript } from './scripts/document-scripts.js';
import type { StorageContext } from './storage-context.js';

/**
 * A2: a document that does not parse is renamed, bytes intact, to a key of its own slot
 * (`<prefix>:{<sessionId>}:quarantine:<collection>:<id>:<unique>`), and recorded in the
 * namespace's quarantine list. The record is written first (its own single write), so
 * moved bytes are never unrecorded; a record whose move did not happen points at a key
 * that reads as null.
 */
export class QuarantineStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async quarantine(collection: Collection, id: string, reason: string): Promise<string> {
    const { keys } = this.context;
    const { document: documentKey, group } = keys.document(collection, id);
    // The record on the namespace's lane, the move on the document's: each is awaited
    // before the next, so their order holds across lanes.
    const { client } = this.context.main;
    const { scripts } = this.context.lane(group);
    const quarantinedAt = Date.now();
    const unique = `${quarantinedAt.toString(36)}-${randomBytes(4).toString('hex')}`;
    const location = keys.quarantined(collection, id, unique);
    const record: QuarantinedDocument = { collection, id, location, reason, quarantinedAt };
    const operation = `quarantine a document (${collection}/${id})`;
    await this.context.command(operation, () =>
      client.rpush(keys.quarantineList(), JSON.stringify(record)),
    );
    await scripts.run(quarantineDocumentScript, [documentKey, location], [], {
      operation,
      durable: true,
    });
    await this.context.command(operation, () => client.zrem(keys.registry(collection), id));
    return location;
  }

  async list(): Promise<QuarantinedDocument[]> {
    const key = this.context.keys.quarantineList();
    const texts = await this.context.command('list quarantined documents', () =>
      this.context.main.client.lrange(key, 0, -1),
    );
    return texts.map((text) => JSON.parse(text) as QuarantinedDocument);
  }

  /** The quarantined bytes as they were stored: base and deltas joined by newlines. */
  async read(location: string): Promise<string | null> {
    if (!this.context.keys.isQuarantineKey(location)) return null;
    const value = await this.context.command('read quarantined bytes', () =>
      this.context.main.client.getBuffer(location),
    );
    if (value === null) return null;
    const parsed = parseDocument(value);
    return parsed === null ? value.toString('utf8') : [parsed.base, ...parsed.deltas].join('\n');
  }
}
