/**
 * Folder validation/: the rules for identity and input that every area shares (A1–A5): the id
 * shapes (ids.ts, A1), the schemas of what is stored (this file: A2, A4, A5), what JSON stores
 * as it is and how deep (json-value.ts, A3, A4), and the checks of a session the caller wrote
 * before it is written (session-validation.ts, A1, A4, E1). Argument checks of one area's calls
 * live with that area (options/, runs/run-input-validation.ts, lifecycle/lifecycle-input.ts).
 */

import { z } from 'zod';
import { ID_PATTERN } from './ids.js';

/**
 * Schemas for everything Keepsake stores. Objects are "loose": unknown fields are kept
 * on round-trip (A4) so an older Keepsake never strips what a newer one wrote.
 */
export const idSchema = z.string().regex(ID_PATTERN, 'must match ^[A-Za-z0-9_-]{1,128}$');

export const timestampSchema = z.number().finite().nonnegative();

export const contentPartSchema = z.looseObject({ type: z.string() });
export const contentSchema = z.union([z.string(), z.array(contentPartSchema)]);

export const attachmentSchema = z.looseObject({
  name: z.string(),
  mimeType: z.string().optional(),
  url: z.string().optional(),
  size: z.number().nonnegative().optional(),
});

/**
 * F4: which journal events a message or tool call was built from (the run, the first
 * event, and the last sequence folded in). De-duplication is by these tags, never by text.
 */
export const journalTagSchema = z.object({
  runId: idSchema,
  eventId: z.string().min(1),
  throughSequence: z.number().int().nonnegative(),
});

/** F2: lazy-retry state carried by an interrupted marker while the journal may still arrive. */
export const retryStateSchema = z.object({
  streamId: idSchema.nullable(),
  attempts: z.number().int().nonnegative(),
  firstSeenAt: timestampSchema,
});

export const markerTypeSchema = z.enum(['interrupted', 'cancelled', 'errored', 'tool-limit']);
export const markerWordingSchema = z.enum([
  'recovered',
  'pending-retry',
  'neutral',
  'cancelled',
  'errored',
  'tool-limit',
]);

export const markerSchema = z.object({
  type: markerTypeSchema,
  wording: markerWordingSchema,
  runId: idSchema.nullable(),
  retry: retryStateSchema.optional(),
});

export const messageRoleSchema = z.enum(['user', 'assistant', 'system', 'tool']);

export const messageSchema = z.looseObject({
  id: idSchema,
  role: messageRoleSchema,
  content: contentSchema,
  createdAt: timestampSchema,
  attachments: z.array(attachmentSchema).optional(),
  /** E6: output kept from a cancelled or failed run. */
  partial: z.boolean().optional(),
  /** E7: reasoning is display metadata, never content the model reads back. */
  reasoning: z.string().optional(),
  runId: idSchema.optional(),
  journal: journalTagSchema.optional(),
  /** F1: restored or rebuilt by crash recovery rather than written by a finished run. */
  recovered: z.boolean().optional(),
  marker: markerSchema.optional(),
});

export const toolCallSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  args: z.unknown().optional(),
  result: z.unknown().optional(),
  isError: z.boolean().optional(),
  done: z.boolean(),
  messageId: idSchema.optional(),
  runId: idSchema.optional(),
  journal: journalTagSchema.optional(),
  recovered: z.boolean().optional(),
});

/** E1: the turn a run owns while it streams. The stream id is the fencing token (D4). */
export const pendingTurnSchema = z.object({
  streamId: idSchema,
  userMessage: messageSchema,
  attachments: z.array(attachmentSchema),
  startedAt: timestampSchema,
  /** Refreshed by checkpoints, so another instance can tell a live run from a dead one. */
  heartbeatAt: timestampSchema.optional(),
  /** F1: the adapter instance that began the run (AdapterLiveness), when it can be asked. */
  ownerId: z.string().min(1).max(512).optional(),
});

/**
 * A1, E1: a pending turn as a save may write it. Stricter than what a read accepts (A5 resets
 * a bad stored field instead): a run stamps its start and heartbeats with the clock, so a
 * time at or before the epoch, or not finite, is not one a run wrote, and recovery would
 * judge the turn dead at once by it.
 */
export const writablePendingTurnSchema = pendingTurnSchema.extend({
  startedAt: z.number().finite().positive(),
  heartbeatAt: z.number().finite().positive().optional(),
});

export const sessionSchema = z.looseObject({
  id: idSchema,
  title: z.string(),
  createdAt: timestampSchema,
  updatedAt: timestampSchema,
  revision: z.number().int().nonnegative(),
  messages: z.array(messageSchema),
  pending: pendingTurnSchema.nullable(),
  toolCalls: z.array(toolCallSchema),
  parentId: idSchema.nullable(),
  /** D2: set on a parent whose id was rotated; such a parent is not listed by default. */
  rotatedTo: idSchema.nullable(),
  metadata: z.record(z.string(), z.unknown()),
});

export const sessionSummarySchema = z.object({
  id: idSchema,
  title: z.string(),
  createdAt: timestampSchema,
  updatedAt: timestampSchema,
  messageCount: z.number().int().nonnegative(),
  pending: z.boolean(),
  parentId: idSchema.nullable(),
  rotatedTo: idSchema.nullable(),
});

export const journalEventTypeSchema = z.enum([
  'token',
  'reasoning',
  'tool',
  'tool_result',
  'warning',
  'done',
  'error',
  'cancel',
  'tool_limit',
  'interrupted',
  'stream_end',
]);

export const journalRecordSchema = z.object({
  sessionId: idSchema,
  runId: idSchema,
  sequence: z.number().int().positive(),
  eventId: z.string().min(1),
  type: journalEventTypeSchema,
  data: z.record(z.string(), z.unknown()),
  at: timestampSchema,
});

export const lifecycleStateSchema = z.object({
  sessionId: idSchema,
  generation: z.number().int().nonnegative(),
  committedGeneration: z.number().int().nonnegative(),
});

export type ContentPart = z.infer<typeof contentPartSchema>;
export type MessageContent = z.infer<typeof contentSchema>;
export type Attachment = z.infer<typeof attachmentSchema>;
export type JournalTag = z.infer<typeof journalTagSchema>;
export type RetryState = z.infer<typeof retryStateSchema>;
export type MarkerType = z.infer<typeof markerTypeSchema>;
export type MarkerWording = z.infer<typeof markerWordingSchema>;
export type Marker = z.infer<typeof markerSchema>;
export type MessageRole = z.infer<typeof messageRoleSchema>;
export type Message = z.infer<typeof messageSchema>;
export type ToolCall = z.infer<typeof toolCallSchema>;
export type PendingTurn = z.infer<typeof pendingTurnSchema>;
export type Session = z.infer<typeof sessionSchema>;
export type SessionSummary = z.infer<typeof sessionSummarySchema>;
export type JournalEventType = z.infer<typeof journalEventTypeSchema>;
export type JournalRecord = z.infer<typeof journalRecordSchema>;
export type LifecycleState = z.infer<typeof lifecycleStateSchema>;
