import type { SessionSummary } from '@keepsake/core';
import { UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { formatTime, oneLine, table } from '../text-format.js';

export interface LsOptions {
  limit: string;
  cursor?: string;
  all?: boolean;
  rotated?: boolean;
  json?: boolean;
}

/**
 * `keepsake ls <store>`: session summaries, newest first, one page at a time (B7). Read
 * through a session store, so what is listed is what is stored: an index entry whose
 * document is gone is left out (and dropped from the index), and a missing index is rebuilt.
 */
export async function lsCommand(
  context: CommandContext,
  url: string,
  options: LsOptions,
): Promise<void> {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new UsageError('--limit must be an integer from 1 to 1000');
  }
  if (options.all === true && options.cursor !== undefined) {
    throw new UsageError('--all lists every page: it does not take --cursor');
  }
  const spec = context.backend(url);
  await context.withStore(spec, 'read', async (store) => {
    let cursor: string | null = options.cursor ?? null;
    const sessions: SessionSummary[] = [];
    do {
      const page = await store.list({ cursor, limit, includeRotated: options.rotated === true });
      sessions.push(...page.sessions);
      cursor = page.nextCursor;
    } while (options.all === true && cursor !== null);
    if (options.json === true) {
      await context.printJson({ sessions, nextCursor: cursor });
      return;
    }
    if (sessions.length === 0) {
      await context.note(`no sessions in ${spec.display}`);
    } else {
      const rows = sessions.map((session) => [
        session.id,
        formatTime(session.updatedAt),
        String(session.messageCount),
        session.pending ? 'pending' : '',
        oneLine(session.title, 60),
      ]);
      for (const line of table([['ID', 'UPDATED', 'MESSAGES', 'TURN', 'TITLE'], ...rows])) {
        await context.print(line);
      }
    }
    if (cursor !== null) {
      await context.note(`more sessions: run again with --cursor '${cursor}' (or --all)`);
    }
  });
}
