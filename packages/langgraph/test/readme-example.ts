import { fsAdapter } from '@keepsake/fs';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { KeepsakeSaver } from '../src/index.js';

const State = Annotation.Root({
  messages: Annotation<string[]>({
    reducer: (left, right) => [...left, ...right],
    default: () => [],
  }),
});
// Every checkpoint is fsynced before put() resolves; a crash never leaves a torn one.
const checkpointer = new KeepsakeSaver({ adapter: fsAdapter({ directory: './checkpoints' }) });
const graph = new StateGraph(State)
  .addNode('reply', (state) => ({ messages: [`echo: ${state.messages.at(-1)}`] }))
  .addEdge(START, 'reply')
  .addEdge('reply', END)
  .compile({ checkpointer });

const config = { configurable: { thread_id: 'chat-1' }, durability: 'sync' as const };
await graph.invoke({ messages: ['hello'] }, config);
console.log((await graph.getState(config)).values.messages); // a restarted process reads the same
