import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsAdapter } from '@keepsake/fs';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { KeepsakeSaver } from '../src/index.js';

// LangGraph's own checkpointer validation suite, unmodified, on the filesystem adapter: a
// fresh directory per checkpointer it asks for, every write fsynced (the saver's default).
const directories = new Map<KeepsakeSaver, string>();

validate<KeepsakeSaver>({
  checkpointerName: '@keepsake/langgraph on fs',
  async createCheckpointer() {
    const directory = await mkdtemp(join(tmpdir(), 'keepsake-langgraph-'));
    const saver = new KeepsakeSaver({ adapter: fsAdapter({ directory }) });
    directories.set(saver, directory);
    return saver;
  },
  async destroyCheckpointer(saver) {
    await saver.close();
    await rm(directories.get(saver)!, { recursive: true, force: true });
    directories.delete(saver);
  },
});
