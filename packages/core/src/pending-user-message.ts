import type { Message, PendingTurn } from './schemas.js';

/**
 * E1, E5, E6, F1: the user message a pending turn puts into the transcript when it ends
 * (completed, cancelled, failed or recovered). `beginRun({ attachments })` keeps the files
 * beside the message in the pending turn, so they must be carried onto the message here:
 * the pending turn is cleared in the same save, and nothing else would keep them.
 * Attachments the message already had come first.
 */
export function pendingUserMessage(pending: PendingTurn): Message {
  const { userMessage, attachments } = pending;
  if (attachments.length === 0) return userMessage;
  return { ...userMessage, attachments: [...(userMessage.attachments ?? []), ...attachments] };
}
