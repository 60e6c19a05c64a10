import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runChat } from './chat.js';

// Usage: node dist/main.js [directory]
// With a directory, the sessions stay there (look at them with `keepsake ls <directory>`);
// without one, they live in a temp directory removed at the end.
const given = process.argv[2];
const directory =
  given === undefined
    ? await mkdtemp(join(tmpdir(), 'keepsake-openai-agents-chat-'))
    : resolve(given);
try {
  await runChat({ directory, log: (line) => console.log(line) });
} finally {
  if (given === undefined) await rm(directory, { recursive: true, force: true });
}
