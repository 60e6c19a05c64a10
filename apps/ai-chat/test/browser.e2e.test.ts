import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type UIMessage, validateUIMessages } from 'ai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedAnswerText } from '../src/server/scripted-model.js';
import { type Browser, launchBrowser, testOutputDirectory } from './helpers/browser.js';
import { type ChatServerProcess, startChatServerProcess } from './helpers/chat-server-process.js';
import { buildClient } from './helpers/client-build.js';

/**
 * The example in Chromium, driving the real `useChat({ resume: true })`: two server
 * processes on one data directory (two instances of one app), the scripted model answering
 * at one word every TOKEN_DELAY_MS, and a short recovery grace so a killed server's answer
 * is recovered within the test.
 */
const TOKEN_DELAY_MS = 40;
const ANSWER_WORDS = 50;
const GRACE_MS = 1_500;

let dataDirectory: string;
let clientDirectory: string;
let first: ChatServerProcess;
let second: ChatServerProcess;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-ai-chat-data-'));
  clientDirectory = await buildClient();
  const env = {
    KEEPSAKE_CHAT_DATA_DIR: dataDirectory,
    KEEPSAKE_CHAT_CLIENT_DIR: clientDirectory,
    KEEPSAKE_CHAT_GRACE_MS: String(GRACE_MS),
    KEEPSAKE_CHAT_TOKEN_DELAY_MS: String(TOKEN_DELAY_MS),
    KEEPSAKE_CHAT_ANSWER_WORDS: String(ANSWER_WORDS),
  };
  [first, second, browser] = await Promise.all([
    startChatServerProcess(env),
    startChatServerProcess(env),
    launchBrowser(),
  ]);
  page = await browser.context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([first?.kill('SIGTERM'), second?.kill('SIGTERM')]);
  await rm(dataDirectory, { recursive: true, force: true });
  await rm(clientDirectory, { recursive: true, force: true });
  expect(pageErrors).toEqual([]);
});

const answerSelector = '.message.assistant .text';

/** Opens a chat on a server and waits until `useChat` checked for a stream to resume. */
async function openChat(server: ChatServerProcess, chatId: string): Promise<void> {
  await page.goto(`${server.url}/?chat=${encodeURIComponent(chatId)}`);
  await page.locator('.chat').waitFor();
}

async function send(text: string): Promise<void> {
  await page.locator('#composer-input').fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** Waits (no polling from here) until the last answer's text is longer than `than` characters. */
async function answerLongerThan(than: number): Promise<number> {
  const handle = await page.waitForFunction(
    `(() => {
      const texts = document.querySelectorAll('${answerSelector}');
      const length = (texts[texts.length - 1]?.textContent ?? '').length;
      return length > ${than} ? length : false;
    })()`,
    undefined,
    { timeout: 20_000 },
  );
  return (await handle.jsonValue()) as number;
}

async function waitUntilReady(): Promise<void> {
  await page.locator('.chat[data-status="ready"]').waitFor({ timeout: 20_000 });
}

const lastAnswerText = () => page.locator(answerSelector).last().textContent();

/** The chat as the server stores it (what `loadChat` gives the page on a reload). */
async function storedChat(server: ChatServerProcess, chatId: string): Promise<UIMessage[]> {
  const response = await fetch(`${server.url}/api/chat/${encodeURIComponent(chatId)}`);
  return ((await response.json()) as { messages: UIMessage[] }).messages;
}

describe('the example chat in Chromium, through useChat({ resume: true })', () => {
  it('streams an answer, resumes it after a reload mid-stream, and loads it back as it was', async () => {
    const question = 'What does Keepsake keep when I reload?';
    await openChat(first, 'reload-chat');
    await send(question);
    await page.locator('.tool[data-state="output-available"]').waitFor({ timeout: 20_000 });
    const beforeReload = await answerLongerThan(30);
    await page.reload();
    // The page loads the question, then useChat resumes: the replay starts from the first
    // chunk and goes on past where the page was.
    await answerLongerThan(beforeReload + 20);
    await page.screenshot({ path: join(testOutputDirectory, 'ai-chat-streaming.png') });
    await waitUntilReady();
    const full = scriptedAnswerText(question, ANSWER_WORDS);
    expect(await lastAnswerText()).toBe(full);
    expect(await page.locator('.message.assistant').count()).toBe(1);
    expect(await page.locator('.message.user').count()).toBe(1);
    await expect.poll(() => page.locator('.source').count()).toBe(1);

    // Stored once, as streamed: a reload shows the same messages, and they validate.
    const stored = await storedChat(first, 'reload-chat');
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant']);
    await validateUIMessages({ messages: stored });
    await page.reload();
    await page.locator(answerSelector).waitFor();
    expect(await lastAnswerText()).toBe(full);
    expect(await page.locator('.message').count()).toBe(2);
    await page.screenshot({ path: join(testOutputDirectory, 'ai-chat.png') });
  });

  it('stop keeps the partial answer under a cancelled marker, also after a reload', async () => {
    await openChat(first, 'stop-chat');
    await send('Tell me a long story');
    await answerLongerThan(40);
    await page.getByRole('button', { name: 'Stop' }).click();
    const marker = page.locator('.marker.cancelled');
    await marker.waitFor({ timeout: 10_000 });
    expect(await marker.textContent()).toBe('Cancelled by the user.');
    await waitUntilReady();
    const partial = (await lastAnswerText())!;
    expect(partial.length).toBeGreaterThan(40);
    expect(partial.length).toBeLessThan(
      scriptedAnswerText('Tell me a long story', ANSWER_WORDS).length,
    );
    await page.reload();
    await page.locator('.marker.cancelled').waitFor();
    expect(await lastAnswerText()).toBe(partial);
    // The chat takes the next message.
    await send('A short one then');
    await waitUntilReadyAfterAnswer('A short one then');
  });

  it('another instance takes over a live stream: the page moves to it and gets the whole answer', async () => {
    const question = 'Can the other server follow?';
    await openChat(first, 'takeover-chat');
    await send(question);
    await answerLongerThan(30);
    await openChat(second, 'takeover-chat');
    await waitUntilReadyAfterAnswer(question);
    expect(await page.locator('.message.assistant').count()).toBe(1);
  });

  it('SIGKILL of the server streaming the answer: the other instance ends the stream with the recovered partial answer', async () => {
    const question = 'What if the server dies now?';
    await openChat(first, 'killed-chat');
    await send(question);
    const seen = await answerLongerThan(60);
    await first.kill('SIGKILL');
    await openChat(second, 'killed-chat');
    // The question is there at once; the answer so far replays; after the recovery grace
    // the stream ends with what the journal holds and an interrupted marker.
    await page.locator('.message.user').waitFor();
    const marker = page.locator('.marker.interrupted');
    await marker.waitFor({ timeout: GRACE_MS * 4 + 10_000 });
    expect(await marker.textContent()).toContain('recovered from the run journal');
    await waitUntilReady();
    const recovered = (await lastAnswerText())!;
    expect(recovered.length).toBeGreaterThanOrEqual(seen);
    expect(scriptedAnswerText(question, ANSWER_WORDS).startsWith(recovered)).toBe(true);
    await page.screenshot({ path: join(testOutputDirectory, 'ai-chat-recovered.png') });
    // Stored the same way: a reload shows the partial answer and the marker.
    await page.reload();
    await page.locator('.marker.interrupted').waitFor();
    expect(await lastAnswerText()).toBe(recovered);
    // The surviving instance answers the next message.
    await send('Are you still there?');
    await waitUntilReadyAfterAnswer('Are you still there?');
  });
});

/** Waits for the answer to `question` to be complete on the page. */
async function waitUntilReadyAfterAnswer(question: string): Promise<void> {
  const full = scriptedAnswerText(question, ANSWER_WORDS);
  await page.waitForFunction(
    `(() => {
      const texts = document.querySelectorAll('${answerSelector}');
      return texts[texts.length - 1]?.textContent === ${JSON.stringify(full)};
    })()`,
    undefined,
    { timeout: 30_000 },
  );
  await waitUntilReady();
}
