import type { AppendLogResult, LogDurability, LogReadResult, LogRecordInput } from '@keepsake/core';
import {
  appendJournalScript,
  deleteJournalScript,
  deleteJournalsScript,
  readJournalScript,
} from './scripts/journal-scripts.js';
import { command, type StorageContext } from './storage-context.js';

type StreamEntry = [id: string, fields: string[]];

/**
 * Run journals (E2, E3) on Redis Streams: one stream per run, entry id `<sequence>-0`,
 * the record's JSON text in the field `t`. A script appends a whole batch or nothing, so a
 * journal never ends in a torn record (`tornTail` is always false).
 */
export class JournalStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async append(
    sessionId: string,
    runId: string,
    records: readonly LogRecordInput[],
    durability: LogDurability,
  ): Promise<AppendLogResult> {
    if (records.length === 0) return { ok: true };
    const { keys, scripts } = this.context;
    const args: Array<string | number> = [runId, this.context.nextWriteToken()];
    for (const record of records) args.push(record.sequence, record.text);
    const reply = (await scripts.run(
      appendJournalScript,
      [keys.journal(sessionId, runId), keys.journals(sessionId)],
      args,
      {
        operation: `append to the journal of run ${runId} (session ${sessionId})`,
        durable: durability !== 'none',
      },
    )) as [number, number?];
    return reply[0] === 1 ? { ok: true } : { ok: false, lastSequence: reply[1] ?? 0 };
  }

  async read(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    const reply = (await this.context.scripts.run(
      readJournalScript,
      [this.context.keys.journal(sessionId, runId)],
      [Math.max(0, Math.floor(options.afterSequence)), options.limit],
      { operation: `read the journal of run ${runId} (session ${sessionId})`, durable: false },
    )) as StreamEntry[] | null;
    if (reply === null) return { exists: false, records: [], tornTail: false };
    const records = reply.map(([id, fields]) => ({
      sequence: Number(id.slice(0, id.indexOf('-'))),
      text: fieldValue(fields, 't'),
    }));
    return { exists: true, records, tornTail: false };
  }

  async list(sessionId: string): Promise<string[]> {
    const key = this.context.keys.journals(sessionId);
    const runIds = await command(`list the journals of session ${sessionId}`, () =>
      this.context.client.smembers(key),
    );
    return runIds.sort();
  }

  async deleteAll(sessionId: string, durable: boolean): Promise<void> {
    const { keys, scripts } = this.context;
    await scripts.run(
      deleteJournalsScript,
      [keys.journals(sessionId)],
      [keys.journalPrefix(sessionId)],
      { operation: `delete the journals of session ${sessionId}`, durable },
    );
  }

  async delete(sessionId: string, runId: string, durable: boolean): Promise<void> {
    const { keys, scripts } = this.context;
    await scripts.run(
      deleteJournalScript,
      [keys.journal(sessionId, runId), keys.journals(sessionId)],
      [runId],
      { operation: `delete the journal of run ${runId} (session ${sessionId})`, durable },
    );
  }
}

function fieldValue(fields: readonly string[], name: string): string {
  for (let index = 0; index + 1 < fields.length; index += 2) {
    if (fields[index] === name) return fields[index + 1]!;
  }
  return '';
}
