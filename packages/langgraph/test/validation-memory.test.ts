import { memoryAdapter } from '@keepsake/core';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { KeepsakeSaver } from '../src/index.js';

// LangGraph's own checkpointer validation suite, unmodified, on the in-memory reference
// adapter: a fresh backend per checkpointer it asks for.
validate<KeepsakeSaver>({
  checkpointerName: '@keepsake/langgraph on memory',
  createCheckpointer: () => new KeepsakeSaver({ adapter: memoryAdapter() }),
  destroyCheckpointer: (saver) => saver.close(),
});
