import type { JournalEventInput, JournalRecord } from '@keepsake/core';
import type { RunStreamEvent } from '@openai/agents-core';

/**
 * A streamed run's event as it is journaled and replayed: JSON, the same shape as the SDK's
 * `RunStreamEvent` with its class instances as their JSON (a run item is `item.toJSON()`, an
 * agent is `{ name }`). What a client reconnecting to any instance reads.
 */
export type JournaledAgentEvent =
  | { type: 'raw_model_stream_event'; data: Record<string, unknown>; source?: string }
  | {
      type: 'run_item_stream_event';
      name: string;
      item: { type: string; rawItem: Record<string, unknown>; agent?: { name: string } };
    }
  | { type: 'agent_updated_stream_event'; agent: { name: string } };

/**
 * One SDK stream event as a journal record (E2), or null for an event that is not journaled:
 * a provider's raw events (`data.type === 'model'`) repeat the SDK's own events and are left
 * out, except reasoning summary deltas, which only they carry.
 *
 * The record's type is what core folds into the transcript when the run ends without this
 * package (a crash, F1; a cancel from another instance, E6): text deltas are `token`,
 * reasoning deltas `reasoning`, a tool call `tool` and its output `tool_result`; everything
 * else is `warning`, stored and replayed but never folded. `foldable: false` (text the history
 * already holds as items) journals a delta as `warning` too. The event rides in `data.event`;
 * a delta's text is stored once, as `data.text`.
 */
export function journalEventOf(event: RunStreamEvent, foldable: boolean): JournalEventInput | null {
  if (event.type === 'raw_model_stream_event') {
    const data = event.data as Record<string, unknown>;
    const source = event.source === undefined ? {} : { source: event.source };
    if (data.type === 'output_text_delta' && typeof data.delta === 'string') {
      const { delta, ...rest } = data;
      return {
        type: foldable ? 'token' : 'warning',
        data: { text: delta, event: jsonOf({ type: event.type, data: rest, ...source }) },
      };
    }
    if (data.type === 'model') {
      const raw = data.event as { type?: unknown; delta?: unknown } | undefined;
      if (raw?.type === 'response.reasoning_summary_text.delta' && typeof raw.delta === 'string') {
        return {
          type: foldable ? 'reasoning' : 'warning',
          data: { text: raw.delta, event: jsonOf({ type: event.type, data, ...source }) },
        };
      }
      return null;
    }
    if (data.type === 'response_done') {
      // The response's output items come as run item events; only its id and usage are kept.
      const response = data.response as { id?: unknown; usage?: unknown } | undefined;
      const kept = {
        type: 'response_done',
        response: { id: response?.id, usage: response?.usage },
      };
      return {
        type: 'warning',
        data: { event: jsonOf({ type: event.type, data: kept, ...source }) },
      };
    }
    return { type: 'warning', data: { event: jsonOf({ type: event.type, data, ...source }) } };
  }
  if (event.type === 'agent_updated_stream_event') {
    return {
      type: 'warning',
      data: { event: { type: event.type, agent: { name: event.agent.name } } },
    };
  }
  const item = jsonOf(event.item) as { rawItem?: Record<string, unknown> };
  const json = { type: event.type, name: event.name, item };
  const raw = item.rawItem ?? {};
  const callId = String(raw.callId ?? raw.id ?? '');
  if ((event.name === 'tool_called' || event.name === 'handoff_requested') && callId !== '') {
    return {
      type: 'tool',
      data: {
        toolCallId: callId,
        name: String(raw.name ?? raw.type ?? 'tool'),
        args: argsOf(raw.arguments),
        event: json,
      },
    };
  }
  if ((event.name === 'tool_output' || event.name === 'handoff_occurred') && callId !== '') {
    return {
      type: 'tool_result',
      data: { toolCallId: callId, result: raw.output ?? null, isError: false, event: json },
    };
  }
  return { type: 'warning', data: { event: json } };
}

/** The event a record carries, or null for a record this package did not write (core's endings). */
export function eventOfRecord(record: JournalRecord): JournaledAgentEvent | null {
  const event = record.data.event;
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return null;
  const copy = structuredClone(event) as JournaledAgentEvent & { data?: Record<string, unknown> };
  if (
    copy.type === 'raw_model_stream_event' &&
    copy.data?.type === 'output_text_delta' &&
    typeof record.data.text === 'string'
  ) {
    copy.data = { ...copy.data, delta: record.data.text };
  }
  return copy;
}

function argsOf(text: unknown): unknown {
  if (typeof text !== 'string') return text ?? null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A value as JSON keeps it (class instances by their toJSON), checked to be an object. */
function jsonOf(value: unknown): Record<string, unknown> {
  const json = JSON.parse(JSON.stringify(value) ?? 'null') as unknown;
  return typeof json === 'object' && json !== null && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : { value: json };
}
