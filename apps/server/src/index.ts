export type { Agent, AgentEvent, AgentMessage, AgentTurnInput } from './agents/agent.js';
export { createOpenAiAgent, type OpenAiAgentOptions } from './agents/openai-agent.js';
export { createScriptedAgent, type ScriptedAgentOptions } from './agents/scripted-agent.js';
export { createBackendAdapter } from './backends/backend-factory.js';
export {
  type AgentConfig,
  type BackendConfig,
  configSchema,
  type ServerConfig,
  type ServerConfigInput,
} from './config/config-schema.js';
export { type LoadConfigOptions, loadConfig } from './config/load-config.js';
export { DemoMemoryProvider, type MemoryRecord } from './memory/demo-memory-provider.js';
export { type CreateServerOptions, createServer, type KeepsakeServer } from './server.js';
export type { ShutdownReport } from './shutdown.js';
export { StartupError } from './startup/startup-error.js';
