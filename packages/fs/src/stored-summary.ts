import {
  decodeStoredSession,
  type SessionSummary,
  type StoredDocument,
  sessionSummarySchema,
} from '@keepsake/core';

/**
 * B7: the index entry of a stored session document, as core makes it (`summaryOf` in core's
 * document-codec.ts): decoded with core's own codec, the summary fields picked by core's
 * schema, the message count and the pending flag derived. Null when the document does not
 * decode (core quarantines it on its next load; such a document is not listed).
 *
 * The adapter needs it in one place only: to put back the entry of a document whose write
 * was taken back after its entry had been queued (index-with-document.ts).
 */
export function summaryOfStored(id: string, stored: StoredDocument): SessionSummary | null {
  const decoded = decodeStoredSession(id, stored, Date.now());
  if (!decoded.ok) return null;
  const { session } = decoded;
  const summary = sessionSummarySchema.safeParse({
    ...session,
    messageCount: session.messages.length,
    pending: session.pending !== null,
  });
  return summary.success ? summary.data : null;
}
