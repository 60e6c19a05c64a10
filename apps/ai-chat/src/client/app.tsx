import { generateId, type UIMessage } from 'ai';
import { useEffect, useState } from 'react';
import { ChatView } from './chat-view.js';

/** The chat id is in the URL (`?chat=…`), so a reload or a link opens the same chat. */
function chatIdFromUrl(): string {
  const url = new URL(window.location.href);
  const existing = url.searchParams.get('chat');
  if (existing !== null && existing !== '') return existing;
  const id = generateId();
  url.searchParams.set('chat', id);
  window.history.replaceState(null, '', url);
  return id;
}

/**
 * Loads the chat as stored (`loadChat` on the server) before `useChat` mounts: the hook
 * takes its initial messages once. While an answer streams, they end with the question;
 * `resume: true` then replays the answer.
 */
export function App() {
  const [chatId] = useState(chatIdFromUrl);
  const [initial, setInitial] = useState<UIMessage[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  useEffect(() => {
    fetch(`/api/chat/${encodeURIComponent(chatId)}`)
      .then(async (response) => {
        if (!response.ok) throw new Error(`loading the chat failed (${response.status})`);
        setInitial(((await response.json()) as { messages: UIMessage[] }).messages);
      })
      .catch((error: unknown) => setLoadError(String(error)));
  }, [chatId]);
  return (
    <main className="app">
      <header>
        <h1>Keepsake × AI SDK</h1>
        <a href="/" className="new-chat">
          New chat
        </a>
      </header>
      {loadError !== null && <p className="load-error">{loadError}</p>}
      {initial !== null && <ChatView chatId={chatId} initialMessages={initial} />}
    </main>
  );
}
