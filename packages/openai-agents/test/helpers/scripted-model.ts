import type {
  AgentInputItem,
  AgentOutputItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from '@openai/agents-core';
import { Usage } from '@openai/agents-core';

/** What the scripted model answers to a request: the output items of one response. */
export type Script = (input: AgentInputItem[], call: number) => AgentOutputItem[];

export interface ScriptedModelOptions {
  /** Wall time between streamed text deltas. @default 0 */
  delayMs?: number;
  /** Called before each streamed delta is handed out (tests gate or count them). */
  beforeDelta?: (index: number) => Promise<void> | void;
}

/**
 * The SDK's `Model` interface, answered from a script instead of a network: no API key, no
 * randomness. A streamed response hands out its text word by word (`output_text_delta`),
 * then `response_done` with the whole response, as the OpenAI Responses model does.
 */
export class ScriptedModel implements Model {
  calls = 0;
  private readonly script: Script;
  private readonly options: ScriptedModelOptions;

  constructor(script: Script, options: ScriptedModelOptions = {}) {
    this.script = script;
    this.options = options;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const output = this.script(inputOf(request), this.calls++);
    return {
      usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }),
      output,
      responseId: `resp_${this.calls}`,
    };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const output = this.script(inputOf(request), this.calls++);
    const responseId = `resp_${this.calls}`;
    yield { type: 'response_started' };
    let index = 0;
    for (const item of output) {
      if (item.type !== 'message' || item.role !== 'assistant') continue;
      for (const part of item.content) {
        if (part.type !== 'output_text') continue;
        for (const word of part.text.split(/(?<= )/)) {
          await this.options.beforeDelta?.(index);
          if ((this.options.delayMs ?? 0) > 0) {
            await new Promise((resolve) => setTimeout(resolve, this.options.delayMs));
          }
          index++;
          yield { type: 'output_text_delta', delta: word, ...(item.id ? { itemId: item.id } : {}) };
        }
      }
    }
    yield {
      type: 'response_done',
      response: {
        id: responseId,
        usage: { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        output: output as never,
      },
    };
  }
}

function inputOf(request: ModelRequest): AgentInputItem[] {
  return typeof request.input === 'string'
    ? [{ type: 'message', role: 'user', content: request.input }]
    : request.input;
}
