import { readFile } from 'node:fs/promises';
import writeFileAtomic from 'write-file-atomic';
import type { PlainSessionDocument } from '../workload/messages.js';
import { durableReplace } from './durable-replace.js';

type Message = PlainSessionDocument['messages'][number];

/**
 * The hand-written loop: the application keeps the session in memory, pushes the new
 * message, serializes the whole document and replaces the file durably.
 */
export async function saveWithHandWrittenLoop(
  path: string,
  session: PlainSessionDocument,
  message: Message,
): Promise<void> {
  session.messages.push(message);
  session.updatedAt = message.createdAt;
  await durableReplace(path, JSON.stringify(session));
}

/**
 * The same in-memory session saved with `write-file-atomic` (temp file, fsync, rename; it
 * does not fsync the directory, so the rename is not yet durable when it resolves).
 */
export async function saveWithWriteFileAtomic(
  path: string,
  session: PlainSessionDocument,
  message: Message,
): Promise<void> {
  session.messages.push(message);
  session.updatedAt = message.createdAt;
  await writeFileAtomic(path, JSON.stringify(session), { fsync: true });
}

/**
 * The whole-file rewrite of the seed projects: read the JSON file, parse it, push one
 * message, write it all back, made durable the same way as the hand-written loop.
 */
export async function saveWithWholeFileRewrite(path: string, message: Message): Promise<void> {
  const session = JSON.parse(await readFile(path, 'utf8')) as PlainSessionDocument;
  session.messages.push(message);
  session.updatedAt = message.createdAt;
  await durableReplace(path, JSON.stringify(session));
}
