import { Agent, type AgentInputItem, handoff, tool } from '@openai/agents-core';
import { z } from 'zod';
import { type Script, ScriptedModel, type ScriptedModelOptions } from './scripted-model.js';

type OutputItem = ReturnType<Script>[number];

function said(text: string, id: string): OutputItem {
  return {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    id,
    content: [{ type: 'output_text', text }],
  };
}

function lastUserText(input: AgentInputItem[]): string {
  for (let index = input.length - 1; index >= 0; index--) {
    const item = input[index] as { type?: string; role?: string; content?: unknown };
    if ((item.type === undefined || item.type === 'message') && item.role === 'user') {
      if (typeof item.content === 'string') return item.content;
      if (Array.isArray(item.content)) {
        return item.content.map((part) => (part as { text?: string }).text ?? '').join('');
      }
    }
  }
  return '';
}

/**
 * The scripted agents of the tests and the example: a travel agent whose `get_weather` runs at
 * once and whose `book_flight` needs approval, and a billing agent it hands off to. The model
 * answers from the conversation alone (deterministic: the same calls give the same output).
 */
export const travelScript: Script = (input, call) => {
  const last = input.at(-1) as { type?: string; name?: string; output?: unknown } | undefined;
  if (last?.type === 'function_call_result') {
    if (last.name === 'transfer_to_billing') {
      return [said('Billing here: your invoice is on its way.', `msg_billing_${call}`)];
    }
    const output = last.output as { text?: string } | string | undefined;
    const text = typeof output === 'string' ? output : (output?.text ?? JSON.stringify(output));
    return [said(`Done: ${text}. Anything else?`, `msg_done_${call}`)];
  }
  const text = lastUserText(input);
  if (text.includes('book')) {
    return [
      {
        type: 'function_call',
        id: `fc_${call}`,
        callId: `call_book_${call}`,
        name: 'book_flight',
        arguments: JSON.stringify({ to: 'Lisbon', seats: 2 }),
        status: 'completed',
      },
    ];
  }
  if (text.includes('weather')) {
    return [
      {
        type: 'reasoning',
        id: `rs_${call}`,
        content: [{ type: 'input_text', text: 'The user wants the weather; ask the tool.' }],
        providerData: { encrypted_content: 'opaque==', $schema: 'kept' },
      } as OutputItem,
      said('Let me check the weather. ', `msg_check_${call}`),
      {
        type: 'function_call',
        id: `fc_${call}`,
        callId: `call_weather_${call}`,
        name: 'get_weather',
        arguments: JSON.stringify({ city: 'Lisbon' }),
        status: 'completed',
      },
    ];
  }
  if (text.includes('invoice')) {
    return [
      {
        type: 'function_call',
        id: `fc_${call}`,
        callId: `call_handoff_${call}`,
        name: 'transfer_to_billing',
        arguments: '{}',
        status: 'completed',
      },
    ];
  }
  return [said(`You said: ${text}. How can I help with your trip?`, `msg_echo_${call}`)];
};

export function travelAgents(options: ScriptedModelOptions = {}) {
  const model = new ScriptedModel(travelScript, options);
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `Sunny, 24°C in ${city}`,
  });
  const bookFlight = tool({
    name: 'book_flight',
    description: 'Books a flight (a person approves it first)',
    parameters: z.object({ to: z.string(), seats: z.number() }),
    needsApproval: true,
    execute: async ({ to, seats }) => `booked ${seats} seats to ${to}`,
  });
  const billing = new Agent({ name: 'billing', instructions: 'Answer billing questions.', model });
  const travel = new Agent({
    name: 'travel',
    instructions: 'Help with trips.',
    model,
    tools: [getWeather, bookFlight],
    handoffs: [handoff(billing)],
  });
  return { travel, billing, model };
}
