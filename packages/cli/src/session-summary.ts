import type { Session, SessionSummary } from '@keepsake/core';

/**
 * The index entry core writes for a session (B7). Core has this as `summaryOf` in its
 * document codec but does not export it; keep the two in step until it does.
 */
export function sessionSummary(session: Session): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    messageCount: session.messages.length,
    pending: session.pending !== null,
    parentId: session.parentId,
    rotatedTo: session.rotatedTo,
  };
}
