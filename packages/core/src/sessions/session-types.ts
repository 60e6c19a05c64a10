import type { Attachment, Message, MessageContent, SessionSummary } from '../validation/schemas.js';

export interface CreateSessionInput {
  /** A1-valid id; a random id when omitted. */
  id?: string;
  title?: string;
  metadata?: Record<string, unknown>;
  messages?: MessageInput[];
  parentId?: string | null;
  /** Unknown fields are kept (A4). */
  [field: string]: unknown;
}

/** A message as callers write it: id and createdAt are filled in when missing. */
export interface MessageInput {
  id?: string | undefined;
  role: Message['role'];
  content: MessageContent;
  createdAt?: number | undefined;
  attachments?: Attachment[] | undefined;
  [field: string]: unknown;
}

export interface SaveOptions {
  /** B3: resolve only once the document is durable. @default false */
  fsync?: boolean;
  /** B7: write the document but leave the session index as it is. @default false */
  skipIndex?: boolean;
  /** B6: set updatedAt to now. Recovery and repair saves pass false. @default true */
  touchUpdatedAt?: boolean;
  /** B5: allow the save to remove stored messages (undo, retry, clear). @default false */
  allowShrink?: boolean;
}

export interface LoadOptions {
  /** B5: load without messages; such a session cannot be saved. @default false */
  summaryOnly?: boolean;
  /**
   * Re-read the stored document when another instance may have changed it (two servers
   * on one backend). The live instance is updated in place unless it has unsaved edits.
   * @default false
   */
  refresh?: boolean;
}

export interface ListOptions {
  /** Opaque cursor from a previous page. */
  cursor?: string | null;
  /** @default 50 */
  limit?: number;
  /** D2: include parents whose id was rotated. @default false */
  includeRotated?: boolean;
}

export interface SessionPage {
  sessions: SessionSummary[];
  nextCursor: string | null;
}
