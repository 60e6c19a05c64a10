import { z } from 'zod';

/** A1: the only id shape the store accepts; checked here so a bad id is a 400 before any I/O. */
export const idField = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1–128 characters of A-Z, a-z, 0-9, "_" or "-"');

const title = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');

export const sessionParams = z.object({ sessionId: idField });
export const runParams = z.object({ sessionId: idField, runId: idField });
export const runIdParams = z.object({ runId: idField });

export const listQuery = z.strictObject({
  cursor: z.string().min(1).max(2048).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
});

export const createSessionBody = z.strictObject({
  title: title.optional(),
  /** The session the user is leaving: its memory is committed at this boundary (G). */
  previousSessionId: idField.optional(),
});

export const updateSessionBody = z.strictObject({ title });

export function messageBody(maxMessageChars: number) {
  return z.strictObject({
    content: z
      .string()
      .max(maxMessageChars, `must be at most ${maxMessageChars} characters`)
      .refine((value) => value.trim().length > 0, 'must not be empty'),
    /** A client-chosen user message id: a retry with the same id is the same send. */
    id: idField.optional(),
  });
}

/** `Idempotency-Key`: printable ASCII without spaces, as the IETF draft and Stripe use it. */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'must be 1–255 printable ASCII characters without spaces')
    .optional(),
});

export const cancelBody = z.strictObject({ runId: idField.optional() });

export const eventsQuery = z.strictObject({
  /** Same meaning as the Last-Event-ID header, for clients that cannot set headers. */
  after: z.coerce.number().int().min(0).optional(),
});

export const lastEventIdHeader = z
  .string()
  .regex(/^\d{1,15}$/, 'Last-Event-ID must be a journal sequence number');
