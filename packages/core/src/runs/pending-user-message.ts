import type { Message, PendingTurn, Session } from '../validation/schemas.js';

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

/**
 * Puts the pending turn's user message into the transcript (once: a message with its id is
 * never added twice). It goes before any output of the same run that the application
 * saved while the run was live (assistant messages tagged with the run's id, F4), so the
 * question always comes before its answer.
 */
export function addPendingUserMessage(
  session: Session,
  pending: PendingTurn,
  extra: Partial<Message> = {},
): void {
  const index = session.messages.findIndex((message) => message.id === pending.userMessage.id);
  if (index >= 0) {
    // E1: the application put the question into the transcript itself while the run was
    // live (a checkpoint that copies `pending.userMessage`); the attachments beginRun kept
    // beside it in the pending turn still go onto it, once, since the pending turn is
    // cleared in this same save.
    session.messages[index] = withAttachments(session.messages[index]!, pending.attachments);
    return;
  }
  const message = { ...pendingUserMessage(pending), ...extra };
  const firstOutput = session.messages.findIndex(
    (candidate) => candidate.runId === pending.streamId && candidate.role !== 'user',
  );
  if (firstOutput < 0) session.messages.push(message);
  else session.messages.splice(firstOutput, 0, message);
}

/** The message with every attachment of `attachments` it lacks, after its own. */
function withAttachments(message: Message, attachments: PendingTurn['attachments']): Message {
  const own = message.attachments ?? [];
  const present = new Set(own.map((attachment) => JSON.stringify(attachment)));
  const missing = attachments.filter((attachment) => !present.has(JSON.stringify(attachment)));
  return missing.length === 0 ? message : { ...message, attachments: [...own, ...missing] };
}
