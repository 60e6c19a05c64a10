import { Agent, type AgentInputItem, type AgentOutputItem, tool } from '@openai/agents-core';
import { z } from 'zod';
import { ScriptedModel } from './scripted-model.js';

/** `get_weather` runs at once; `book_flight` spends money, so a person approves it first. */
const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny and 24°C in ${city}`,
});

const bookFlight = tool({
  name: 'book_flight',
  description: 'Books a flight (a person approves it first)',
  parameters: z.object({ to: z.string(), seats: z.number() }),
  needsApproval: true,
  execute: async ({ to, seats }) => `booked ${seats} seats to ${to}`,
});

/**
 * What the scripted model answers: after a tool result, a sentence about it; to a question
 * about the weather or a booking, a call of the tool; to anything else, a greeting.
 */
function travelScript(input: AgentInputItem[]): AgentOutputItem[] {
  const last = input.at(-1) as { type?: string; output?: unknown } | undefined;
  if (last?.type === 'function_call_result') {
    const output = last.output as { text?: string } | string;
    const text = typeof output === 'string' ? output : output.text;
    return [say(`Done: ${text}. Anything else?`)];
  }
  const question = lastUserText(input).toLowerCase();
  if (question.includes('weather')) return [call('get_weather', { city: 'Lisbon' })];
  if (question.includes('book')) return [call('book_flight', { to: 'Lisbon', seats: 2 })];
  return [say('Hello! I can check the weather and book flights.')];
}

export function createTravelAgent(): Agent {
  return new Agent({
    name: 'travel',
    instructions: 'Help with trips.',
    model: new ScriptedModel(travelScript),
    tools: [getWeather, bookFlight],
  });
}

let outputs = 0;

function say(text: string): AgentOutputItem {
  return {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    id: `msg_${++outputs}`,
    content: [{ type: 'output_text', text }],
  };
}

function call(name: string, args: Record<string, unknown>): AgentOutputItem {
  return {
    type: 'function_call',
    id: `fc_${++outputs}`,
    callId: `call_${outputs}`,
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  };
}

function lastUserText(input: AgentInputItem[]): string {
  for (const item of [...input].reverse()) {
    if (item.type !== undefined && item.type !== 'message') continue;
    if (!('role' in item) || item.role !== 'user') continue;
    if (typeof item.content === 'string') return item.content;
    return item.content.map((part) => ('text' in part ? part.text : '')).join('');
  }
  return '';
}
