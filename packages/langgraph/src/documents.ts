import { z } from 'zod';

/**
 * The documents the saver stores, each one JSON text (a Keepsake document body is a string).
 * Serialized values are the saver's `serde` output, `[type, bytes]`, with the bytes in
 * base64: checkpoint data may be binary, and base64 carries any byte through every backend.
 *
 * - a checkpoint (`checkpoints`, `<thread>.<namespace>.<checkpoint>`): the checkpoint without
 *   its channel values, its metadata, its parent's id, the values of the channels in the
 *   put's `newVersions` (`values`), and for every other channel the checkpoint that holds
 *   its value at this version (`sources`). An unchanged channel, a long history for
 *   instance, is never written again: a `put` writes one document.
 * - pending writes (`checkpoint-writes`, five segments): every write of one `putWrites`
 *   call, in one document, so a task's writes are stored all or none (B1): LangGraph treats
 *   a task with any stored write as done, and a part of its writes would be a lost update.
 *
 * Every document names the thread, namespace and ids it belongs to, so a read checks that
 * it got the document it asked for (ids that were hashed, see document-ids.ts) and a listing
 * knows what it found without decoding ids.
 */
export const FORMAT_VERSION = 1;

const serialized = z.strictObject({
  type: z.string(),
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'not base64'),
});
export type SerializedValue = z.infer<typeof serialized>;

const placement = {
  thread_id: z.string(),
  checkpoint_ns: z.string(),
};

const version = z.union([z.string(), z.number()]);

export const checkpointDocumentSchema = z.strictObject({
  keepsake: z.literal('langgraph-checkpoint'),
  v: z.literal(FORMAT_VERSION),
  ...placement,
  checkpoint_id: z.string(),
  parent_checkpoint_id: z.string().nullable(),
  checkpoint: serialized,
  metadata: serialized,
  /** Channels whose version this checkpoint wrote; a null value: the channel is empty. */
  values: z.record(z.string(), z.strictObject({ version, value: serialized.nullable() })),
  /** Channels it did not write: the checkpoint whose `values` hold them at this version. */
  sources: z.record(z.string(), z.strictObject({ version, checkpoint_id: z.string() })),
});
export type CheckpointDocument = z.infer<typeof checkpointDocumentSchema>;

export const writeDocumentSchema = z.strictObject({
  keepsake: z.literal('langgraph-writes'),
  v: z.literal(FORMAT_VERSION),
  ...placement,
  checkpoint_id: z.string(),
  task_id: z.string(),
  task_path: z.string(),
  /**
   * `order`: when the write was stored, relative to the task's other writes (absent: 0, a
   * document written before orders existed). A special write (negative index) with a higher
   * order replaces one with a lower; a regular write with the lowest order stays.
   */
  writes: z.array(
    z.strictObject({
      idx: z.number().int(),
      channel: z.string(),
      value: serialized,
      order: z.number().int().nonnegative().optional(),
    }),
  ),
});
export type WriteDocument = z.infer<typeof writeDocumentSchema>;

export type ParseResult<T> = { ok: true; document: T } | { ok: false; reason: string };

/** Parses a stored body; never throws (a damaged document is quarantined by the caller). */
export function parseDocument<T>(schema: z.ZodType<T>, text: string): ParseResult<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON (${(error as Error).message})` };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      reason: `not a ${describe(schema)} (${issue?.path.join('.') || 'document'}: ${issue?.message})`,
    };
  }
  return { ok: true, document: parsed.data };
}

function describe(schema: z.ZodType<unknown>): string {
  if (schema === (checkpointDocumentSchema as z.ZodType<unknown>)) return 'checkpoint document';
  return 'pending writes document';
}

export function toSerialized([type, bytes]: [string, Uint8Array]): SerializedValue {
  return {
    type,
    data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  };
}

export function bytesOf(value: SerializedValue): Uint8Array {
  return new Uint8Array(Buffer.from(value.data, 'base64'));
}
