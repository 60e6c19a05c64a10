import { EventSourceParserStream } from 'eventsource-parser/stream';

/** Response bodies are free-form JSON; tests read the fields they assert on. */
// biome-ignore lint/suspicious/noExplicitAny: the shape is what each test asserts
export type Json = any;

export interface JsonResponse<T = Json> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  token?: string | null;
  method?: string;
  body?: unknown;
  /** Sent as is (for malformed bodies). */
  rawBody?: string;
  headers?: Record<string, string>;
}

/** One HTTP call against a running server; the JSON body parsed when there is one. */
export async function call<T = Json>(
  baseUrl: string,
  path: string,
  options: RequestOptions = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(`${baseUrl}${path}`, {
    method: options.method ?? 'GET',
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    // Not JSON (metrics, HTML): keep the text.
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: Json;
}

export interface ReadEventsOptions {
  token?: string | null;
  lastEventId?: number;
  /** Sent as well (an Accept header to negotiate with, for instance). */
  headers?: Record<string, string>;
  /** Stop (and disconnect) once this returns true for an event. */
  until?: (event: SseEvent, events: SseEvent[]) => boolean;
  signal?: AbortSignal;
}

export interface ReadEventsResult {
  status: number;
  events: SseEvent[];
  /** True when the server sent its `end` event. */
  ended: boolean;
  /** The body when the server answered with an error instead of a stream. */
  errorBody?: Json;
}

/** Reads an SSE stream with a maintained parser until it ends or `until` says stop. */
export async function readEvents(
  url: string,
  options: ReadEventsOptions = {},
): Promise<ReadEventsResult> {
  const controller = new AbortController();
  options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.lastEventId !== undefined) headers['last-event-id'] = String(options.lastEventId);
  const response = await fetch(url, { headers, signal: controller.signal });
  if (!response.ok || response.body === null) {
    return { status: response.status, events: [], ended: false, errorBody: await response.json() };
  }
  const events: SseEvent[] = [];
  let ended = false;
  const reader = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const event: SseEvent = { id: value.id, event: value.event, data: JSON.parse(value.data) };
      events.push(event);
      if (event.event === 'end') {
        ended = true;
        break;
      }
      if (options.until?.(event, events)) break;
    }
  } catch (error) {
    // A server killed mid-stream ends the body with an error: what arrived is the result.
    if (!(error instanceof TypeError) && (error as Error).name !== 'AbortError') throw error;
  } finally {
    controller.abort();
  }
  return { status: response.status, events, ended };
}

/** The journal records among SSE events (everything but `end`). */
export function recordsOf(events: SseEvent[]): SseEvent[] {
  return events.filter((event) => event.event !== 'end');
}
