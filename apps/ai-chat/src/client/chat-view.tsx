import { useChat } from '@ai-sdk/react';
import type { KeepsakeDataTypes } from '@keepsake/ai-sdk';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { type FormEvent, useMemo, useState } from 'react';
import { MessageView } from './message-view.js';

export type ChatMessage = UIMessage<unknown, KeepsakeDataTypes>;

/**
 * The real `useChat` hook with `resume: true`: on mount it asks `GET /api/chat/:id/stream`
 * for an answer to replay (204: none). Only the new message is sent; the server has the
 * rest. Stop asks the server (any instance) to stop the answer; the stream then ends by
 * itself with the partial answer and a `cancelled` marker.
 */
export function ChatView({
  chatId,
  initialMessages,
}: {
  chatId: string;
  initialMessages: UIMessage[];
}) {
  const transport = useMemo(
    () =>
      new DefaultChatTransport<ChatMessage>({
        api: '/api/chat',
        prepareSendMessagesRequest: ({ id, messages, trigger }) => ({
          body: { id, message: messages.at(-1), trigger },
        }),
      }),
    [],
  );
  const { messages, sendMessage, status, error } = useChat<ChatMessage>({
    id: chatId,
    messages: initialMessages as ChatMessage[],
    resume: true,
    transport,
  });
  const [input, setInput] = useState('');
  const [stopping, setStopping] = useState(false);
  const busy = status === 'submitted' || status === 'streaming';

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const text = input.trim();
    if (text === '' || busy) return;
    setInput('');
    void sendMessage({ text });
  };
  const stop = async () => {
    setStopping(true);
    try {
      await fetch(`/api/chat/${encodeURIComponent(chatId)}/stop`, { method: 'POST' });
    } finally {
      setStopping(false);
    }
  };

  return (
    <section className="chat" data-status={status} aria-busy={busy}>
      <ol className="messages">
        {messages.map((message) => (
          <MessageView key={message.id} message={message} />
        ))}
      </ol>
      {error !== undefined && <p className="chat-error">{error.message}</p>}
      <form className="composer" onSubmit={submit}>
        <input
          id="composer-input"
          aria-label="Message"
          value={input}
          placeholder="Ask something…"
          onChange={(event) => setInput(event.target.value)}
        />
        {busy ? (
          <button type="button" onClick={() => void stop()} disabled={stopping}>
            Stop
          </button>
        ) : (
          <button type="submit" disabled={input.trim() === ''}>
            Send
          </button>
        )}
      </form>
    </section>
  );
}
