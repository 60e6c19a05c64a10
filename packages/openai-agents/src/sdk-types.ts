import type { Agent, RunState, StreamedRunResult } from '@openai/agents-core';

// The SDK's classes are generic in their context and output types; this package stores and
// resumes any of them, as the SDK's own session code does.
// biome-ignore lint/suspicious/noExplicitAny: any agent, whatever its context and output types
export type AnyAgent = Agent<any, any>;
// biome-ignore lint/suspicious/noExplicitAny: the state of any agent's run
export type AnyRunState = RunState<any, any>;
/** The state of a run of `TAgent`, as `RunState.fromString(agent, …)` types it. */
// biome-ignore lint/suspicious/noExplicitAny: any context type
export type RunStateOf<TAgent extends AnyAgent> = RunState<any, TAgent>;
// biome-ignore lint/suspicious/noExplicitAny: any agent's streamed result
export type AnyStreamedResult = StreamedRunResult<any, any>;
