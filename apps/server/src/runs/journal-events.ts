import type { JournalEventInput, Message } from '@keepsake/core';
import type { AgentEvent, AgentMessage } from '../agents/agent.js';

/**
 * The journal shape of each agent event. Core folds these fields into the transcript
 * (`text` of tokens and reasoning, `toolCallId`/`name`/`args` of tools, `result`/`isError`
 * of tool results), so the same record serves streaming, completion and crash recovery.
 */
export function toJournalEvent(event: AgentEvent): JournalEventInput {
  switch (event.type) {
    case 'token':
    case 'reasoning':
      return { type: event.type, data: { text: event.text } };
    case 'tool':
      return {
        type: 'tool',
        data: { toolCallId: event.toolCallId, name: event.name, args: event.args ?? null },
      };
    case 'tool_result':
      return {
        type: 'tool_result',
        data: {
          toolCallId: event.toolCallId,
          result: event.result ?? null,
          isError: !!event.isError,
        },
      };
    case 'warning':
      return { type: 'warning', data: { message: event.message } };
  }
}

/** The transcript as a model reads it: markers and reasoning are display-only (E7). */
export function toAgentHistory(messages: readonly Message[]): AgentMessage[] {
  const history: AgentMessage[] = [];
  for (const message of messages) {
    if (message.marker !== undefined || message.role === 'tool') continue;
    const content = textOf(message);
    if (content.length === 0) continue;
    history.push({ role: message.role, content });
  }
  return history;
}

export function textOf(message: Pick<Message, 'content'>): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}
