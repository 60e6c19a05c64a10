import type { AppendLogResult, LogDurability, LogReadResult, LogRecordInput } from '@keepsake/core';
import { toKeepsakeError } from './errors.js';
import type { Step } from './script-runner.js';
import {
  appendJournalScript,
  deleteJournalsScript,
  listJournalsScript,
  readJournalScript,
} from './scripts/journal-scripts.js';
import type { StorageContext } from './storage-context.js';

type StreamEntry = [id: string, fields: string[]];

/**
 * Run journals (E2, E3) on Redis Streams: one stream per run, one entry per appended batch
 * (id `<last sequence>-0`, fields `f` first sequence, `w` write token, then sequence →
 * record text). A batch is one XADD, so a journal never ends in a torn record (`tornTail`
 * is always false). The session's run ids are a set, added to before a run's first append.
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
    const { keys } = this.context;
    // Every key of a session's journals is on the session's lane: appends keep their order.
    const { scripts } = this.context.lane(sessionId);
    const durable = durability !== 'none';
    const args: Array<string | number> = [this.context.nextWriteToken()];
    for (const record of records) args.push(record.sequence, record.text);
    const appendStep: Step = {
      script: appendJournalScript,
      keys: [keys.journal(sessionId, runId)],
      args,
    };
    // A streamed event of a journal that exists (the common append): its script alone,
    // without the batch's layers; the operation's name is made only for an error.
    if (records[0]!.sequence !== 1 && scripts.sendsAlone(durable)) {
      let reply: unknown;
      try {
        reply = await scripts.sendAlone(appendStep);
      } catch (error) {
        throw toKeepsakeError(error, appendOperation(sessionId, runId));
      }
      return appendResultOf(reply as [number, number?]);
    }
    const operation = appendOperation(sessionId, runId);
    // A new journal's run id is listed first (one write each; listing checks the stream).
    const steps: Step[] =
      records[0]!.sequence === 1
        ? [{ command: 'SADD', args: [keys.journals(sessionId), runId] }, appendStep]
        : [appendStep];
    const results = await scripts.batch(steps, { operation, durable });
    for (const result of results) {
      if (!result.ok) throw toKeepsakeError(result.error, operation);
    }
    return appendResultOf((results.at(-1) as { value: [number, number?] }).value);
  }

  async read(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    const after = Math.max(0, Math.floor(options.afterSequence));
    const entries = (await this.context.lane(sessionId).scripts.run(
      readJournalScript,
      [this.context.keys.journal(sessionId, runId)],
      // Each entry holds one record or more: `limit` entries hold at least `limit` records.
      [after, Math.max(1, options.limit)],
      { operation: `read the journal of run ${runId} (session ${sessionId})`, durable: false },
    )) as StreamEntry[] | null;
    if (entries === null) return { exists: false, records: [], tornTail: false };
    const records: LogRecordInput[] = [];
    for (const [, fields] of entries) {
      for (let index = 0; index + 1 < fields.length; index += 2) {
        const name = fields[index]!;
        if (name === 'f' || name === 'w') continue;
        const sequence = Number(name);
        if (sequence > after && records.length < options.limit) {
          records.push({ sequence, text: fields[index + 1]! });
        }
      }
    }
    return { exists: true, records, tornTail: false };
  }

  async list(sessionId: string): Promise<string[]> {
    const { keys } = this.context;
    const { scripts } = this.context.lane(sessionId);
    const runIds = (await scripts.run(
      listJournalsScript,
      [keys.journals(sessionId)],
      [keys.journalPrefix(sessionId)],
      { operation: `list the journals of session ${sessionId}`, durable: false },
    )) as string[];
    return runIds.sort();
  }

  async deleteAll(sessionId: string, durable: boolean): Promise<void> {
    const { keys } = this.context;
    const { scripts } = this.context.lane(sessionId);
    await scripts.run(
      deleteJournalsScript,
      [keys.journals(sessionId)],
      [keys.journalPrefix(sessionId)],
      { operation: `delete the journals of session ${sessionId}`, durable },
    );
  }

  async delete(sessionId: string, runId: string, durable: boolean): Promise<void> {
    const { keys } = this.context;
    const { scripts } = this.context.lane(sessionId);
    const operation = `delete the journal of run ${runId} (session ${sessionId})`;
    // Two single writes: the stream first, so a crash in between leaves a run id that
    // lists no journal (listing checks the stream), never a journal nothing lists.
    const results = await scripts.batch(
      [
        { command: 'DEL', args: [keys.journal(sessionId, runId)] },
        { command: 'SREM', args: [keys.journals(sessionId), runId] },
      ],
      { operation, durable },
    );
    for (const result of results) {
      if (!result.ok) throw toKeepsakeError(result.error, operation);
    }
  }
}

function appendOperation(sessionId: string, runId: string): string {
  return `append to the journal of run ${runId} (session ${sessionId})`;
}

/** The append script's reply: { 1 } appended (or already), { 0, last sequence } refused. */
function appendResultOf(reply: [number, number?]): AppendLogResult {
  return reply[0] === 1 ? { ok: true } : { ok: false, lastSequence: reply[1] ?? 0 };
}
