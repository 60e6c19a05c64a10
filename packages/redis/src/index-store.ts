import type { IndexPage, SessionSummary } from '@keepsake/core';
import { toKeepsakeError } from './errors.js';
import { listIndexScript, putIndexEntryScript, startIndexScript } from './scripts/index-scripts.js';
import type { StorageContext } from './storage-context.js';

/** Entries per HSET of a rebuild: big enough to be quick, small enough not to block. */
const BUILD_CHUNK = 500;
/** A rebuild cut short by a crash leaves its build key behind for an hour at most. */
const BUILD_TTL_SECONDS = 3_600;

/**
 * An entry's place in the index order: `updatedAt` inverted and zero-padded, then the id,
 * so byte order is newest first, then id ascending (B7).
 */
export function indexMember(summary: SessionSummary): string {
  const updatedAt = Math.min(Math.max(Math.floor(summary.updatedAt), 0), Number.MAX_SAFE_INTEGER);
  const inverted = (Number.MAX_SAFE_INTEGER - updatedAt).toString().padStart(16, '0');
  return `${inverted}:${summary.id}`;
}

/** What the index stores for a session: its order member, a tab, its summary JSON. */
export function indexValue(summary: SessionSummary): string {
  return `${indexMember(summary)}\t${JSON.stringify(summary)}`;
}

/**
 * The session index (B7): one hash per namespace (see scripts/index-scripts.ts). Every
 * change is one HSET or HDEL and a rebuild is one RENAME, so it is never half written; the
 * price is a page that scans the namespace's entries on the server (see the README).
 */
export class IndexStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async put(summary: SessionSummary, durable: boolean): Promise<void> {
    // On the session's lane: after its document's writes sent before it.
    await this.context
      .lane(summary.id)
      .scripts.run(
        putIndexEntryScript,
        [this.context.keys.index()],
        [summary.id, indexValue(summary)],
        { operation: `update the session index (${summary.id})`, durable },
      );
  }

  /** At open: a namespace without sessions gets its (empty, complete) index. */
  async start(): Promise<void> {
    const { keys } = this.context;
    await this.context.main.scripts.run(
      startIndexScript,
      [keys.index(), keys.registry('sessions')],
      [],
      {
        operation: 'start the session index',
        durable: false,
      },
    );
  }

  async delete(id: string, durable: boolean): Promise<void> {
    await this.write(
      ['HDEL', this.context.keys.index(), id],
      durable,
      `update the session index (${id})`,
      id,
    );
  }

  /** Writes the new index under a build key, chunk by chunk, then renames it into place. */
  async replace(summaries: readonly SessionSummary[], durable: boolean): Promise<void> {
    const { keys } = this.context;
    const { client } = this.context.main;
    const live = keys.index();
    const build = keys.indexBuild(this.context.nextWriteToken());
    const operation = 'rebuild the session index';
    await this.context.command(operation, () => client.hset(build, '~', '1'));
    await this.context.command(operation, () => client.expire(build, BUILD_TTL_SECONDS));
    for (let start = 0; start < summaries.length; start += BUILD_CHUNK) {
      const fields = summaries
        .slice(start, start + BUILD_CHUNK)
        .flatMap((summary) => [summary.id, indexValue(summary)]);
      await this.context.command(operation, () => client.hset(build, ...fields));
    }
    await this.write(['RENAME', build, live], false, operation);
    // The build's expiry came along with the rename: the live index must not keep it (a
    // crash before this line costs an index that expires, and is then rebuilt).
    await this.write(['PERSIST', live], durable, operation);
  }

  async list(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const values = (await this.context.main.scripts.run(
      listIndexScript,
      [this.context.keys.index()],
      [options.cursor ?? '', options.limit],
      { operation: 'read the session index', durable: false },
    )) as [string[]] | null;
    if (values === null) return { status: 'missing' };
    const entries: unknown[] = [];
    let lastMember: string | null = null;
    for (const value of values[0].slice(0, options.limit)) {
      const tab = value.indexOf('\t');
      if (tab < 0) return { status: 'corrupt', reason: 'an index entry has no order member' };
      try {
        entries.push(JSON.parse(value.slice(tab + 1)));
      } catch {
        return { status: 'corrupt', reason: `index entry ${value.slice(0, tab)} is not JSON` };
      }
      lastMember = value.slice(0, tab);
    }
    const nextCursor = values[0].length > options.limit ? lastMember : null;
    return { status: 'ok', entries, nextCursor };
  }

  private async write(
    [name, ...args]: [string, ...Array<string | number>],
    durable: boolean,
    operation: string,
    sessionId?: string,
  ): Promise<void> {
    const lane = sessionId === undefined ? this.context.main : this.context.lane(sessionId);
    const [result] = await lane.scripts.batch([{ command: name, args }], {
      operation,
      durable,
    });
    if (!result!.ok) throw toKeepsakeError(result!.error, operation);
  }
}
