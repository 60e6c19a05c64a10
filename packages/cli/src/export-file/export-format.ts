import { ID_PATTERN, isValidDocumentId } from '@keepsake/core';
import { z } from 'zod';

/**
 * The export file: JSON Lines, one object a line, in this order:
 *
 * 1. a header: `{"keepsake":"export","format":1,"source":"fs","exportedAt":"…"}`;
 * 2. a `document` line per document of every collection (sessions, retained revisions,
 *    lifecycle state, run records, checkpoints, checkpoint writes), each session followed by
 *    the `journal` lines of its runs (one per record, in sequence order);
 * 3. an `end` line with the counts and the SHA-256 of every byte before it, so a truncated
 *    or edited file is refused on import instead of half-imported. The counts of `runs`,
 *    `checkpoints` and `checkpoint-writes` are written only when not zero, so a file without
 *    such documents stays readable by a CLI that predates them (and one with them is
 *    refused by it, never half-imported).
 *
 * Documents and records are kept as the exact text the store holds (`text`), not re-parsed
 * into the line, so an import writes back the same bytes.
 */
export const EXPORT_FORMAT = 1;

const id = z.string().regex(ID_PATTERN);
const revisionId = z.string().regex(/^[A-Za-z0-9_-]{1,128}\.\d+$/);
const count = z.number().int().nonnegative();
const dottedId = (collection: 'checkpoints' | 'checkpoint-writes') =>
  z.string().refine((value) => isValidDocumentId(collection, value), {
    message: `not a ${collection} document id`,
  });
const opaqueDocument = <C extends 'runs' | 'checkpoints' | 'checkpoint-writes'>(
  collection: C,
  idSchema: z.ZodType<string>,
) =>
  z.strictObject({
    type: z.literal('document'),
    collection: z.literal(collection),
    id: idSchema,
    revision: count,
    text: z.string(),
  });

export const headerLineSchema = z.strictObject({
  keepsake: z.literal('export'),
  format: z.literal(EXPORT_FORMAT),
  source: z.string(),
  exportedAt: z.string(),
});

export const documentLineSchema = z.discriminatedUnion('collection', [
  z.strictObject({
    type: z.literal('document'),
    collection: z.literal('sessions'),
    id,
    revision: count,
    text: z.string(),
  }),
  z.strictObject({
    type: z.literal('document'),
    collection: z.literal('revisions'),
    id: revisionId,
    revision: count,
    text: z.string(),
  }),
  z.strictObject({
    type: z.literal('document'),
    collection: z.literal('lifecycle'),
    id,
    revision: count,
    text: z.string(),
  }),
  opaqueDocument('runs', id),
  opaqueDocument('checkpoints', dottedId('checkpoints')),
  opaqueDocument('checkpoint-writes', dottedId('checkpoint-writes')),
]);

export const journalLineSchema = z.strictObject({
  type: z.literal('journal'),
  sessionId: id,
  runId: id,
  sequence: z.number().int().positive(),
  text: z.string(),
});

export const endLineSchema = z.strictObject({
  type: z.literal('end'),
  documents: z.strictObject({
    sessions: count,
    revisions: count,
    lifecycle: count,
    runs: count.optional(),
    checkpoints: count.optional(),
    'checkpoint-writes': count.optional(),
  }),
  journals: count,
  journalRecords: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export const bodyLineSchema = z.union([documentLineSchema, journalLineSchema, endLineSchema]);

export type HeaderLine = z.infer<typeof headerLineSchema>;
export type DocumentLine = z.infer<typeof documentLineSchema>;
export type JournalLine = z.infer<typeof journalLineSchema>;
export type EndLine = z.infer<typeof endLineSchema>;
