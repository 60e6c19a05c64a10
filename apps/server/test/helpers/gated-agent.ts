import type { Agent, AgentEvent } from '../../src/agents/agent.js';

/**
 * A test agent whose events the test releases one by one, so cancel, busy and mid-stream
 * scenarios happen at exact points instead of after guessed delays.
 */
export interface GatedAgent {
  agent: Agent;
  push(...events: AgentEvent[]): void;
  finish(): void;
  fail(error: Error): void;
  /** The abort signal of the most recent run. */
  readonly lastSignal: AbortSignal | null;
}

export function createGatedAgent(): GatedAgent {
  const queue: Array<AgentEvent | { finish: true } | { error: Error }> = [];
  let wake: (() => void) | null = null;
  let lastSignal: AbortSignal | null = null;
  const release = () => {
    wake?.();
    wake = null;
  };
  return {
    agent: {
      name: 'gated',
      async *stream({ signal }) {
        lastSignal = signal;
        for (;;) {
          while (queue.length === 0) {
            await new Promise<void>((resolve) => {
              wake = resolve;
              signal.addEventListener('abort', () => resolve(), { once: true });
            });
            signal.throwIfAborted();
          }
          const item = queue.shift()!;
          if ('finish' in item) return;
          if ('error' in item) throw item.error;
          yield item;
        }
      },
    },
    push(...events) {
      queue.push(...events);
      release();
    },
    finish() {
      queue.push({ finish: true });
      release();
    },
    fail(error) {
      queue.push({ error });
      release();
    },
    get lastSignal() {
      return lastSignal;
    },
  };
}
