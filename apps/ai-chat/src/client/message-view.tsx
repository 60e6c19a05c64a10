import { getToolName, isToolUIPart } from 'ai';
import type { ChatMessage } from './chat-view.js';

/** One message, part by part: text, reasoning, tool calls, sources, and Keepsake's marker. */
export function MessageView({ message }: { message: ChatMessage }) {
  return (
    <li className={`message ${message.role}`} data-message-id={message.id}>
      {message.parts.map((part, index) => {
        const key = `${message.id}-${index}`;
        if (part.type === 'text') {
          return (
            <p key={key} className="text" data-state={part.state ?? 'done'}>
              {part.text}
            </p>
          );
        }
        if (part.type === 'reasoning') {
          return (
            <details key={key} className="reasoning">
              <summary>Reasoning</summary>
              {part.text}
            </details>
          );
        }
        if (isToolUIPart(part)) {
          return (
            <p key={key} className="tool" data-state={part.state}>
              Tool {getToolName(part)}: <span className="tool-state">{part.state}</span>
            </p>
          );
        }
        if (part.type === 'source-url') {
          return (
            <a key={key} className="source" href={part.url} rel="noreferrer">
              {part.title ?? part.url}
            </a>
          );
        }
        if (part.type === 'data-keepsake-marker') {
          return (
            <p key={key} className={`marker ${part.data.type}`} role="note">
              {part.data.text}
            </p>
          );
        }
        return null;
      })}
    </li>
  );
}
