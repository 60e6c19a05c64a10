import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { readEvents, recordsOf } from './helpers/http-client.js';
import { aliceToken } from './helpers/test-server.js';

let dataDirectory: string;
const children: ChildServer[] = [];

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-crash-e2e-'));
});
afterAll(async () => {
  await Promise.all(children.map((child) => child.kill('SIGKILL')));
  await rm(dataDirectory, { recursive: true, force: true });
});

async function start(): Promise<ChildServer> {
  const child = await startChildServer({
    KEEPSAKE_DATA_DIR: dataDirectory,
    KEEPSAKE_TOKENS: `alice:${aliceToken}`,
    // Slow enough that the kill lands mid-answer.
    KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
    KEEPSAKE_SCRIPTED_ANSWER_WORDS: '2000',
    KEEPSAKE_RECOVERY_GRACE_MS: '300',
    KEEPSAKE_STREAM_POLL_MS: '50',
  });
  children.push(child);
  return child;
}

describe('crash e2e: SIGKILL mid-stream, restart, recover from the journal', () => {
  it('F1: the transcript shows the user turn and the partial output above an interrupted marker; Last-Event-ID gets the rest', async () => {
    const first = await start();
    const sessionId = await createSession(first.url, aliceToken, 'Crash drill');
    const { runId } = await sendMessage(first.url, aliceToken, sessionId, 'Tell me a long story');
    const eventsPath = `/api/sessions/${sessionId}/runs/${runId}/events`;
    const seen = await readEvents(`${first.url}${eventsPath}`, {
      token: aliceToken,
      until: (_event, events) => events.filter((event) => event.event === 'token').length >= 8,
    });
    const lastSeen = Number(seen.events.at(-1)?.id);
    expect(lastSeen).toBeGreaterThanOrEqual(13);

    const killed = await first.kill('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');

    const second = await start();
    // The client reconnects with Last-Event-ID: it gets the records it missed, then the
    // interrupted record that recovery appended for the dead run, then the end of the stream.
    const resumed = await readEvents(`${second.url}${eventsPath}`, {
      token: aliceToken,
      lastEventId: lastSeen,
    });
    expect(resumed.ended).toBe(true);
    const rest = recordsOf(resumed.events);
    expect(rest.map((event) => Number(event.id))).toEqual(
      rest.map((_event, index) => lastSeen + 1 + index),
    );
    expect(rest.at(-1)?.event).toBe('interrupted');
    expect(resumed.events.at(-1)?.data).toMatchObject({ terminalState: 'interrupted-by-crash' });

    const all = await readEvents(`${second.url}${eventsPath}`, { token: aliceToken });
    const journal = recordsOf(all.events);
    expect(journal.slice(0, seen.events.length)).toEqual(seen.events);
    const streamedText = journal
      .filter((event) => event.event === 'token')
      .map((event) => event.data.data.text)
      .join('');

    const session = await getSession(second.url, aliceToken, sessionId);
    expect(session.pending).toBeNull();
    const [user, ...rest2] = session.messages;
    expect(user).toMatchObject({
      role: 'user',
      content: 'Tell me a long story',
      recovered: true,
    });
    const marker = rest2.at(-1);
    expect(marker.marker).toMatchObject({ type: 'interrupted', wording: 'recovered', runId });
    const answer = rest2.find(
      (message: { content: unknown; marker?: unknown }) =>
        message.marker === undefined && typeof message.content === 'string' && message.content,
    );
    expect(answer).toMatchObject({ role: 'assistant', recovered: true, content: streamedText });
    expect(answer.content).toContain('You asked: “Tell me a long story”.');
    expect(session.toolCalls).toEqual([
      expect.objectContaining({ name: 'search_notes', done: true, recovered: true }),
    ]);

    // F4: loading again neither duplicates the recovered output nor adds a second marker.
    const again = await getSession(second.url, aliceToken, sessionId);
    expect(again.messages).toEqual(session.messages);
    await second.kill('SIGTERM');
  });
});
