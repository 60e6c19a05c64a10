import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, launchBrowser, testOutputDirectory } from './helpers/browser.js';
import { createSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { readEvents } from './helpers/http-client.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';

let browser: Browser;
let harness: TestServer;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  harness = await startTestServer({
    tokens: false,
    config: { agent: { kind: 'scripted', tokenDelayMs: 40, answerWords: 120 } },
  });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
});
afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

/**
 * Waits (without polling from here) until the streaming answer is longer than `than`
 * characters; resolves with its length. The page-side code is a string because this
 * package's TypeScript has no DOM types.
 */
async function waitForLongerAnswer(than: number): Promise<number> {
  const handle = await page.waitForFunction(
    `(() => {
      const bubble = document.querySelector('.message.assistant.streaming .bubble');
      const length = (bubble?.textContent ?? '').length;
      return length > ${than} ? length : false;
    })()`,
    undefined,
    { timeout: 15_000 },
  );
  return (await handle.jsonValue()) as number;
}

const focused = (property: 'id' | 'className') =>
  page.evaluate<string | undefined>(`document.activeElement?.${property}`);

describe('web demo in Chromium', () => {
  it('sends a message, streams it, cancels, resumes after a reload mid-stream', async () => {
    await page.goto(harness.url);
    await expect
      .poll(() => page.locator('#server-info').textContent())
      .toContain('agent: scripted');

    // Keyboard: the skip link is the first stop and leads to the message box.
    await page.keyboard.press('Tab');
    expect(await focused('className')).toBe('skip-link');
    await page.keyboard.press('Enter');
    expect(await focused('id')).toBe('composer-input');

    // Send with the keyboard; watch reasoning, the tool call and the answer stream in.
    await page.keyboard.type('My name is Ada and I like hiking. What does Keepsake keep?');
    await page.keyboard.press('Enter');
    await page.locator('.tool-call .tool-name', { hasText: 'search_notes' }).waitFor();
    const early = await waitForLongerAnswer(40);
    const later = await waitForLongerAnswer(early + 20);
    expect(later).toBeGreaterThan(early);
    await expect.poll(() => page.locator('#chat-title').textContent()).toContain('My name is Ada');

    // Cancel: the partial answer stays, above a cancel marker.
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const cancelled = page.locator('.marker.cancelled');
    await cancelled.waitFor();
    expect(await cancelled.textContent()).toContain('Cancelled by the user.');
    expect(
      await page.locator('.message.assistant[data-partial="true"] .bubble').textContent(),
    ).toMatch(/^You asked/);
    await page.getByRole('button', { name: 'Send' }).waitFor({ state: 'visible' });
    expect(await page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);

    // A second question, then a reload in the middle of its answer.
    await page.locator('#composer-input').fill('And what happens if I reload right now?');
    await page.getByRole('button', { name: 'Send' }).click();
    const beforeReload = await waitForLongerAnswer(60);
    const url = page.url();
    expect(url).toMatch(/#\/s\/[A-Za-z0-9_-]+$/);
    await page.reload();
    // The page finds the pending turn and follows the run from the journal's first record.
    await page.locator('.message.assistant.streaming').waitFor({ timeout: 10_000 });
    await waitForLongerAnswer(beforeReload + 10);
    await page.screenshot({ path: join(testOutputDirectory, 'server-demo-streaming.png') });
    // It completes: the stored transcript replaces the live view, with no marker for this turn.
    await page
      .locator('.message.assistant.streaming')
      .waitFor({ state: 'detached', timeout: 20_000 });
    const lastAnswer = page.locator('.message.assistant .bubble').last();
    expect(await lastAnswer.textContent()).toMatch(/^You asked: “And what happens if I reload/);
    expect(await lastAnswer.textContent()).toMatch(/\.$/);
    expect(await page.locator('.marker').count()).toBe(1);

    // A new chat is the memory boundary: the first chat's completed turn is extracted.
    await page.getByRole('button', { name: '+ New chat' }).click();
    await page.locator('.memory-record').first().waitFor({ timeout: 10_000 });
    expect(await page.locator('.memory-record').first().textContent()).toContain('I like hiking.');
    await page.locator('.session-item').nth(1).click();
    await page.locator('.marker.cancelled').waitFor();
    await page.screenshot({ path: join(testOutputDirectory, 'server-demo.png') });

    // Narrow screens: the session list folds behind a toggle.
    await page.setViewportSize({ width: 390, height: 780 });
    expect(await page.locator('#sidebar').isVisible()).toBe(false);
    await page.locator('#sidebar-toggle').click();
    expect(await page.locator('#sidebar').isVisible()).toBe(true);
    await page.screenshot({ path: join(testOutputDirectory, 'server-demo-mobile.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(pageErrors).toEqual([]);
  });
});

describe('web demo after a crash', () => {
  let dataDirectory: string;
  const children: ChildServer[] = [];
  beforeAll(async () => {
    dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-browser-crash-'));
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    await rm(dataDirectory, { recursive: true, force: true });
  });

  it('F1: shows the recovered turn and its output above a distinct interrupted marker', async () => {
    const environment = {
      KEEPSAKE_DATA_DIR: dataDirectory,
      KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '15',
      KEEPSAKE_SCRIPTED_ANSWER_WORDS: '2000',
      KEEPSAKE_RECOVERY_GRACE_MS: '300',
    };
    const first = await startChildServer(environment);
    children.push(first);
    const sessionId = await createSession(first.url, null, 'Crashed chat');
    const { eventsUrl } = await sendMessage(first.url, null, sessionId, 'Survive a crash?');
    await readEvents(`${first.url}${eventsUrl}`, {
      until: (_event, events) => events.length >= 12,
    });
    await first.kill('SIGKILL');
    const second = await startChildServer(environment);
    children.push(second);

    await page.goto(`${second.url}/#/s/${sessionId}`);
    const marker = page.locator('.marker.interrupted');
    await marker.waitFor({ timeout: 15_000 });
    expect(await marker.getAttribute('data-marker-wording')).toBe('recovered');
    expect(await marker.textContent()).toContain('recovered from the run journal');
    expect(await page.locator('.message.user[data-recovered="true"]').textContent()).toContain(
      'Survive a crash?',
    );
    expect(
      await page.locator('.message.assistant[data-recovered="true"] .bubble').textContent(),
    ).toMatch(/^You asked: “Survive a crash\?”\. Keepsake/);
    // The marker comes last, below the recovered output.
    expect(await page.locator('.transcript > li').last().getAttribute('class')).toContain(
      'marker interrupted',
    );
    await page.screenshot({ path: join(testOutputDirectory, 'server-demo-recovered.png') });
    expect(pageErrors).toEqual([]);
  });
});
