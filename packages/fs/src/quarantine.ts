import { randomBytes } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import type { Collection, QuarantinedDocument } from '@keepsake/core';
import { renameWithRetry, writeFileAtomic } from './atomic-write.js';
import { type AdapterContext, makeDirectory, removeDirectoryIfEmpty } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { decodeFrames } from './framing.js';
import { assertDocumentId, decodeName, encodeId } from './id-encoding.js';
import { COLLECTIONS } from './layout.js';
import { readOptional } from './optional-file.js';
import { decodeDelta } from './records.js';
import { readBase } from './segment-base.js';

/**
 * A2: a document that does not parse is moved, by rename, into its own entry under
 * `quarantine/`, named `<quarantinedAt>~<collection>~<encoded id>~<random>`, with its base
 * and delta files byte for byte as they were and a `quarantine.json` saying why. The move is
 * always durable: quarantined bytes must neither vanish nor come back as the live document.
 */
export const METADATA_FILE = 'quarantine.json';
const ENTRY_NAME = /^(\d+)~([a-z-]+)~([^~]+)~[0-9a-f]+$/;

/** Whether `name` is an entry of the quarantine directory (anything else is not this store's). */
export function isQuarantineEntryName(name: string): boolean {
  return ENTRY_NAME.test(name);
}

export class QuarantineStore {
  private readonly context: AdapterContext;

  constructor(context: AdapterContext) {
    this.context = context;
  }

  async quarantine(collection: Collection, id: string, reason: string): Promise<string> {
    assertDocumentId(collection, id);
    const { layout, locks, fileSystem, durability } = this.context;
    const paths = layout.document(collection, id);
    const location = await locks.withLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async () => {
        const quarantinedAt = Date.now();
        const name = `${quarantinedAt}~${collection}~${encodeId(id)}~${randomBytes(4).toString('hex')}`;
        const entry = join(layout.quarantineDirectory, name);
        await makeDirectory(fileSystem, entry);
        const moved: string[] = [];
        for (const [from, file] of [
          [paths.base, 'document'],
          [paths.deltas, 'deltas'],
        ] as const) {
          try {
            await renameWithRetry(
              fileSystem,
              from,
              join(entry, file),
              this.context.options.retrySharingViolations,
            );
            moved.push(file);
          } catch (error) {
            if (!isNotFound(error)) throw toBackendError(error, `quarantine ${from}`);
          }
        }
        const metadata = { collection, id, reason, quarantinedAt, files: moved };
        await writeFileAtomic(
          fileSystem,
          join(entry, METADATA_FILE),
          Buffer.from(`${JSON.stringify(metadata, null, 2)}\n`),
          { durable: true, retrySharingViolations: this.context.options.retrySharingViolations },
        );
        // The new names first, then the removal from the document's directory.
        await durability.syncDirectory(entry);
        await durability.ensureLinked(entry, false);
        await durability.syncDirectory(paths.directory);
        return entry;
      },
    );
    if (await removeDirectoryIfEmpty(fileSystem, paths.directory)) {
      durability.forget(paths.directory);
    }
    return location;
  }

  async list(): Promise<QuarantinedDocument[]> {
    const { fileSystem, layout } = this.context;
    let names: string[];
    try {
      names = await fileSystem.readdir(layout.quarantineDirectory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw toBackendError(error, 'list quarantine');
    }
    const documents: QuarantinedDocument[] = [];
    for (const name of names.sort()) {
      const match = ENTRY_NAME.exec(name);
      const collection = match?.[2] as Collection | undefined;
      const id = match ? decodeName(match[3] as string) : null;
      if (!match || id === null || !collection || !COLLECTIONS.includes(collection)) continue;
      const location = join(layout.quarantineDirectory, name);
      documents.push({
        collection,
        id,
        location,
        reason: await this.readReason(location),
        quarantinedAt: Number(match[1]),
      });
    }
    return documents.sort((left, right) => left.quarantinedAt - right.quarantinedAt);
  }

  /**
   * A2: the quarantined bytes at `location` as the store wrote them: the base document's
   * text, then each delta's text, joined by newlines. A base whose header or checksum is
   * wrong comes back whole, header included, and a delta file's undecodable tail comes back
   * as its raw text on a line of its own, so nothing moved aside is hidden. Null for a
   * location that is not an entry of this quarantine directory, or that holds nothing.
   */
  async read(location: string): Promise<string | null> {
    const { fileSystem, layout } = this.context;
    if (dirname(resolve(location)) !== resolve(layout.quarantineDirectory)) return null;
    if (!ENTRY_NAME.test(basename(location))) return null;
    const base = await readBase(fileSystem, join(location, 'document'));
    const deltaBytes = await readOptional(fileSystem, join(location, 'deltas'));
    if (base.status === 'missing' && deltaBytes === null) return null;
    const parts: string[] = [];
    if (base.status === 'ok') parts.push(base.text);
    if (base.status === 'corrupt') parts.push(base.raw);
    if (deltaBytes !== null) {
      const frames = decodeFrames(deltaBytes);
      for (const payload of frames.payloads) {
        const delta = decodeDelta(payload);
        parts.push(delta === null ? Buffer.from(payload).toString('utf8') : delta.text);
      }
      if (frames.torn) {
        parts.push(Buffer.from(deltaBytes.subarray(frames.validLength)).toString('utf8'));
      }
    }
    return parts.join('\n');
  }

  private async readReason(location: string): Promise<string> {
    try {
      const bytes = await this.context.fileSystem.readFile(join(location, METADATA_FILE));
      const metadata = JSON.parse(Buffer.from(bytes).toString('utf8')) as { reason?: unknown };
      return typeof metadata.reason === 'string' ? metadata.reason : 'unknown';
    } catch (error) {
      // Moved, but interrupted before its metadata was written.
      if (isNotFound(error) || error instanceof SyntaxError)
        return 'unknown (interrupted quarantine)';
      throw toBackendError(error, `read ${location}`);
    }
  }
}
