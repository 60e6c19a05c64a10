import type { JournalEventInput, JournalRecord } from '@keepsake/core';
import type { UIMessageChunk } from 'ai';

/**
 * One `UIMessageChunk` is one journal record (E2). The record's type is the one core folds
 * into a transcript when a run ends without this package (a cancel from another tool, crash
 * recovery, F1): text deltas are `token`, reasoning deltas `reasoning`, a complete tool
 * input `tool`, a tool's output or error `tool_result`, each with the fields core reads
 * (`text`; `toolCallId`, `name`, `args`; `result`, `isError`). Every other chunk (start,
 * steps, sources, files, data parts, metadata, the AI SDK's own `error` and `finish`) is a
 * `warning` record, which core stores and replays but never folds. The chunk itself rides
 * in `data.chunk`, so a replay gives back exactly what was streamed; the delta of a text or
 * reasoning chunk is stored once, as `text`, since those are most of a stream's bytes.
 */
export function journalEventOf(chunk: UIMessageChunk): JournalEventInput {
  switch (chunk.type) {
    case 'text-delta':
    case 'reasoning-delta': {
      const { delta, ...rest } = chunk;
      return {
        type: chunk.type === 'text-delta' ? 'token' : 'reasoning',
        data: { text: delta, chunk: rest },
      };
    }
    case 'tool-input-available':
      return {
        type: 'tool',
        data: {
          toolCallId: chunk.toolCallId,
          name: chunk.toolName,
          args: chunk.input ?? null,
          chunk,
        },
      };
    case 'tool-output-available':
      return {
        type: 'tool_result',
        data: { toolCallId: chunk.toolCallId, result: chunk.output ?? null, isError: false, chunk },
      };
    case 'tool-output-error':
      return {
        type: 'tool_result',
        data: { toolCallId: chunk.toolCallId, result: chunk.errorText, isError: true, chunk },
      };
    default:
      return { type: 'warning', data: { chunk } };
  }
}

/**
 * The chunk a record carries, or null for a record this package did not write (core's own
 * terminal records: `done`, `cancel`, `error`, `interrupted`; or another writer's events).
 */
export function chunkOfRecord(record: JournalRecord): UIMessageChunk | null {
  const chunk = record.data.chunk;
  if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) return null;
  const stored = chunk as { type?: unknown };
  if (typeof stored.type !== 'string') return null;
  if (record.type === 'token' || record.type === 'reasoning') {
    const text = record.data.text;
    if (typeof text !== 'string') return null;
    return { ...(chunk as object), delta: text } as UIMessageChunk;
  }
  return chunk as UIMessageChunk;
}

/** Whether a record is output core counts when it words a marker (`recovered` vs `neutral`). */
export function isOutputRecord(record: JournalRecord): boolean {
  return (
    record.type === 'token' ||
    record.type === 'reasoning' ||
    record.type === 'tool' ||
    record.type === 'tool_result'
  );
}
