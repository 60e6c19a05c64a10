/** What an agent streams. Each event becomes one journal record of the run. */
export type AgentEvent =
  | { type: 'token'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool'; toolCallId: string; name: string; args: unknown }
  | { type: 'tool_result'; toolCallId: string; result: unknown; isError?: boolean }
  | { type: 'warning'; message: string };

export interface AgentMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface AgentTurnInput {
  sessionId: string;
  /** The transcript so far, ending with the user message this run answers. */
  messages: AgentMessage[];
  /** Aborted on cancel and on shutdown; an agent stops streaming promptly when it fires. */
  signal: AbortSignal;
}

/** A chat agent: given a transcript, streams its answer as events. */
export interface Agent {
  /** Short name for logs and the UI: "scripted", "openai". */
  readonly name: string;
  stream(input: AgentTurnInput): AsyncIterable<AgentEvent>;
}
