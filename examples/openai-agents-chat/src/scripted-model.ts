import type {
  AgentInputItem,
  AgentOutputItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from '@openai/agents-core';
import { Usage } from '@openai/agents-core';

/** Decides what the model "says" next, from the conversation so far. */
export type Script = (input: AgentInputItem[]) => AgentOutputItem[];

/**
 * The Agents SDK's `Model` interface answered by a script instead of OpenAI's API: no network,
 * no API key, the same output on every run. Swap it for a real model (`model: 'gpt-5'` on the
 * agent, with `OPENAI_API_KEY` set) and nothing else in the example changes.
 *
 * A model implements two calls: `getResponse` (a whole response) and `getStreamedResponse`
 * (the same response as events: text deltas, then `response_done` with every output item).
 */
export class ScriptedModel implements Model {
  private responses = 0;
  private readonly script: Script;

  constructor(script: Script) {
    this.script = script;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    return {
      usage: new Usage({ requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }),
      output: this.script(inputOf(request)),
      responseId: `resp_${++this.responses}`,
    };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const output = this.script(inputOf(request));
    yield { type: 'response_started' };
    // The assistant's text, word by word, as a real model streams it.
    for (const item of output) {
      if (item.type !== 'message' || item.role !== 'assistant') continue;
      for (const part of item.content) {
        if (part.type !== 'output_text') continue;
        for (const word of part.text.split(/(?<= )/)) {
          yield { type: 'output_text_delta', delta: word, ...(item.id ? { itemId: item.id } : {}) };
        }
      }
    }
    yield {
      type: 'response_done',
      response: {
        id: `resp_${++this.responses}`,
        usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
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
