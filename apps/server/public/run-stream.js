// Follows one run's journal over SSE. `fetch` rather than EventSource, because EventSource
// cannot send the Authorization header. Each event's id is its journal sequence: after a
// dropped connection the stream reconnects with Last-Event-ID and loses nothing.
import { EventSourceParserStream } from '/vendor/eventsource-parser/stream.js';
import { authHeaders } from './api.js';

export function followRun({ sessionId, runId, afterSequence = 0, onRecord, onEnd, onStatus }) {
  const controller = new AbortController();
  let lastSequence = afterSequence;

  const run = async () => {
    let backoffMs = 250;
    while (!controller.signal.aborted) {
      try {
        const headers = { accept: 'text/event-stream', ...authHeaders() };
        if (lastSequence > 0) headers['last-event-id'] = String(lastSequence);
        const response = await fetch(
          `/api/sessions/${encodeURIComponent(sessionId)}/runs/${encodeURIComponent(runId)}/events`,
          { headers, signal: controller.signal },
        );
        if (response.status >= 400 && response.status < 500) {
          const data = await response.json().catch(() => null);
          onEnd({ reason: 'error', terminalState: null, error: data?.error ?? null });
          return;
        }
        if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
        onStatus('live');
        const reader = response.body
          .pipeThrough(new TextDecoderStream())
          .pipeThrough(new EventSourceParserStream())
          .getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (value.event === 'end') {
            onEnd(JSON.parse(value.data));
            return;
          }
          const record = JSON.parse(value.data);
          // A run that left no journal ends with its marker, which has no sequence.
          if (typeof record.sequence === 'number') lastSequence = record.sequence;
          backoffMs = 250;
          onRecord(record);
        }
      } catch {
        if (controller.signal.aborted) return;
      }
      // The connection dropped before the run ended (a restart, a proxy): resume.
      onStatus('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
      backoffMs = Math.min(backoffMs * 2, 4000);
    }
  };
  void run();
  return {
    stop: () => controller.abort(),
    get lastSequence() {
      return lastSequence;
    },
  };
}
