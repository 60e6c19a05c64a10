import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../src/agents/agent.js';
import { createOpenAiAgent } from '../src/agents/openai-agent.js';
import { createScriptedAgent } from '../src/agents/scripted-agent.js';
import { chat, createSession, getSession } from './helpers/chat-flows.js';
import type { Json } from './helpers/http-client.js';
import { aliceToken, startTestServer } from './helpers/test-server.js';

async function collect(stream: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const turn = (content: string, signal = new AbortController().signal) => ({
  sessionId: 's1',
  messages: [{ role: 'user' as const, content }],
  signal,
});

describe('scripted agent', () => {
  it('streams the same reasoning, tool call, tool result and answer for the same question', async () => {
    const agent = createScriptedAgent({ tokenDelayMs: 0, answerWords: 12 });
    const first = await collect(agent.stream(turn('Where is my data?')));
    const second = await collect(agent.stream(turn('Where is my data?')));
    expect(first).toEqual(second);
    expect(first.map((event) => event.type)).toEqual([
      'reasoning',
      'reasoning',
      'reasoning',
      'tool',
      'tool_result',
      ...Array.from({ length: 13 }, () => 'token'),
    ]);
    const answer = first.flatMap((event) => (event.type === 'token' ? [event.text] : [])).join('');
    expect(answer).toMatch(/^You asked: “Where is my data\?”\. Keepsake journals/);
    expect(answer.endsWith('.')).toBe(true);
  });

  it('stops promptly when its signal aborts', async () => {
    const agent = createScriptedAgent({ tokenDelayMs: 5, answerWords: 1000 });
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    await expect(async () => {
      for await (const event of agent.stream(turn('long', controller.signal))) {
        events.push(event);
        if (events.length === 3) controller.abort();
      }
    }).rejects.toThrow();
    expect(events).toHaveLength(3);
  });
});

/**
 * A stand-in for an OpenAI-compatible model server on loopback (the network here reaches
 * nothing else). It streams chat-completion chunks as SSE, like vLLM or OpenAI does.
 */
describe('OpenAI-compatible agent against a local chat-completions server', () => {
  let upstream: FastifyInstance;
  let baseUrl: string;
  const requests: Array<{ authorization: string | undefined; body: Json }> = [];

  beforeAll(async () => {
    upstream = Fastify();
    upstream.post('/v1/chat/completions', async (request, reply) => {
      requests.push({ authorization: request.headers.authorization, body: request.body });
      const body = request.body as { messages: Array<{ content: string }> };
      if (body.messages.at(-1)?.content === 'please fail') {
        return reply.code(500).send({ error: { message: 'upstream is down' } });
      }
      const chunks = [
        { choices: [{ delta: { reasoning_content: 'Thinking.' } }] },
        { choices: [{ delta: { content: 'Hello' } }] },
        { choices: [{ delta: { content: ', world' } }] },
        { choices: [{ delta: {}, finish_reason: 'stop' }] },
      ];
      const text = `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`;
      return reply.type('text/event-stream').send(text);
    });
    await upstream.listen({ port: 0, host: '127.0.0.1' });
    const address = upstream.server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1`;
  });
  afterAll(() => upstream.close());

  it('streams content as tokens and reasoning as reasoning, with the key as bearer', async () => {
    const agent = createOpenAiAgent({ baseUrl, apiKey: 'sk-local', model: 'tiny' });
    const events = await collect(agent.stream(turn('hi')));
    expect(events).toEqual([
      { type: 'reasoning', text: 'Thinking.' },
      { type: 'token', text: 'Hello' },
      { type: 'token', text: ', world' },
    ]);
    expect(requests.at(-1)).toMatchObject({
      authorization: 'Bearer sk-local',
      body: { model: 'tiny', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
  });

  it('runs end to end through the server, and an upstream failure becomes an errored run', async () => {
    const harness = await startTestServer({
      config: { agent: { kind: 'openai', baseUrl, apiKey: 'sk-local', model: 'tiny' } },
    });
    try {
      const sessionId = await createSession(harness.url, aliceToken);
      await chat(harness.url, aliceToken, sessionId, 'hi');
      const session = await getSession(harness.url, aliceToken, sessionId);
      expect(session.messages.at(-1)).toMatchObject({
        role: 'assistant',
        content: 'Hello, world',
        reasoning: 'Thinking.',
      });

      const { stream } = await chat(harness.url, aliceToken, sessionId, 'please fail');
      expect(stream.events.at(-1)?.data.terminalState).toBe('errored');
      // The failure is written after the stream's last record: wait for the run to finish.
      await Promise.all(
        harness.server.namespaces.all().map((namespace) => namespace.runs.settle()),
      );
      const failed = await getSession(harness.url, aliceToken, sessionId);
      expect(failed.pending).toBeNull();
      expect(failed.messages.at(-1).marker).toMatchObject({ type: 'errored' });
      expect(failed.messages.at(-1).content).toContain('HTTP 500');
    } finally {
      await harness.close();
    }
  });
});
