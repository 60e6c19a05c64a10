import type { AgentConfig } from '../config/config-schema.js';
import type { Agent } from './agent.js';
import { createOpenAiAgent } from './openai-agent.js';
import { createScriptedAgent } from './scripted-agent.js';

export function createAgent(config: AgentConfig): Agent {
  if (config.kind === 'openai') {
    return createOpenAiAgent({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      model: config.model,
      timeoutMs: config.timeoutMs,
      ...(config.systemPrompt !== undefined ? { systemPrompt: config.systemPrompt } : {}),
    });
  }
  return createScriptedAgent({
    tokenDelayMs: config.tokenDelayMs,
    answerWords: config.answerWords,
  });
}
