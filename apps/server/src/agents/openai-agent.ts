import { BackendError, BackendUnavailableError } from '@keepsake/core';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Agent, AgentEvent, AgentTurnInput } from './agent.js';

export interface OpenAiAgentOptions {
  /** API root, e.g. https://api.openai.com/v1; `/chat/completions` is appended. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Whole-request budget. @default 120000 */
  timeoutMs?: number;
  systemPrompt?: string;
  /** Injectable for tests that talk to a local fake upstream. @default globalThis.fetch */
  fetch?: typeof fetch;
}

interface ChatCompletionChunk {
  choices?: Array<{
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
    };
    finish_reason?: string | null;
  }>;
}

/**
 * Streams answers from any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
 * llama.cpp, Ollama's /v1). Content deltas become tokens, reasoning deltas (the
 * `reasoning_content` or `reasoning` field several servers use) become reasoning events.
 */
export function createOpenAiAgent(options: OpenAiAgentOptions): Agent {
  const endpoint = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const fetchImplementation = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 120_000;

  return {
    name: 'openai',
    async *stream(input: AgentTurnInput): AsyncGenerator<AgentEvent> {
      const messages = options.systemPrompt
        ? [{ role: 'system' as const, content: options.systemPrompt }, ...input.messages]
        : input.messages;
      const signal = AbortSignal.any([input.signal, AbortSignal.timeout(timeoutMs)]);
      let response: Response;
      try {
        response = await fetchImplementation(endpoint, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.apiKey}`,
            'content-type': 'application/json',
            accept: 'text/event-stream',
          },
          body: JSON.stringify({ model: options.model, messages, stream: true }),
          signal,
        });
      } catch (error) {
        input.signal.throwIfAborted();
        throw new BackendUnavailableError('openai', `cannot reach ${endpoint}`, { cause: error });
      }
      if (!response.ok || response.body === null) {
        const detail = await response.text().catch(() => '');
        throw new BackendError('openai', `complete the chat (HTTP ${response.status})`, {
          cause: new Error(detail.slice(0, 500)),
        });
      }
      const events = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream());
      for await (const event of events) {
        if (event.data === '[DONE]') return;
        const chunk = parseChunk(event.data);
        if (chunk === null) {
          yield { type: 'warning', message: 'The model server sent a chunk that is not JSON' };
          continue;
        }
        const delta = chunk.choices?.[0]?.delta;
        const reasoning = delta?.reasoning_content ?? delta?.reasoning;
        if (typeof reasoning === 'string' && reasoning.length > 0) {
          yield { type: 'reasoning', text: reasoning };
        }
        if (typeof delta?.content === 'string' && delta.content.length > 0) {
          yield { type: 'token', text: delta.content };
        }
      }
    },
  };
}

function parseChunk(data: string): ChatCompletionChunk | null {
  try {
    return JSON.parse(data) as ChatCompletionChunk;
  } catch {
    return null;
  }
}
