import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, launchBrowser, testOutputDirectory } from './helpers/browser.js';
import { createSession, getSession, sendMessage } from './helpers/chat-flows.js';
import { type ChildServer, startChildServer } from './helpers/child-server.js';
import { createGatedAgent } from './helpers/gated-agent.js';
import { readEvents } from './helpers/http-client.js';
import { aliceToken, bobToken, startTestServer, type TestServer } from './helpers/test-server.js';

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

    // A new chat is the memory boundary: the first chat's completed turn is extracted, and
    // not the cancelled one.
    await page.getByRole('button', { name: '+ New chat' }).click();
    await page.locator('.memory-record').first().waitFor({ timeout: 10_000 });
    const remembered = await page.locator('.memory-record').first().textContent();
    expect(remembered).toContain('1 completed turn');
    expect(remembered).toContain('Talked about: And what happens if I reload right now?');
    expect(remembered).not.toContain('hiking');
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
    expect(pageErrors, pageErrors.join('\n')).toEqual([]);
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
    expect(pageErrors, pageErrors.join('\n')).toEqual([]);
  });
});

/** The session id in a demo URL (`…/#/s/<id>`). */
function sessionIdOf(url: string): string {
  const match = /#\/s\/([A-Za-z0-9_-]+)$/.exec(url);
  if (match?.[1] === undefined) throw new Error(`no session in ${url}`);
  return match[1];
}

/** Whether the transcript is taller than its box and scrolled to its end. */
function transcriptAtLatest(on: Page): Promise<boolean> {
  return on.evaluate<boolean>(`(() => {
    const transcript = document.getElementById('transcript');
    return transcript.scrollHeight > transcript.clientHeight + 100 &&
      transcript.scrollTop + transcript.clientHeight >= transcript.scrollHeight - 2;
  })()`);
}

describe('the demo, as a user sees it', () => {
  const gated = createGatedAgent();
  let gatedHarness: TestServer;
  let userPage: Page;
  beforeAll(async () => {
    gatedHarness = await startTestServer({ tokens: false, agent: gated.agent });
    userPage = await browser.context.newPage();
    userPage.on('pageerror', (error) => pageErrors.push(error.message));
  });
  afterAll(async () => {
    await userPage?.close();
    await gatedHarness?.close();
  });

  const longAnswer = (topic: string) =>
    `About ${topic}: ${'Durable sessions keep every word of an answer. '.repeat(30)}`;

  /** Sends a question and waits for its live turn (the run is pending until the agent streams). */
  async function ask(question: string) {
    await userPage.locator('#composer-input').fill(question);
    await userPage.locator('#send-button').click();
    await userPage.locator('.message.user.live').waitFor();
  }

  /** Lets the agent answer in full; resolves once the stored transcript replaced the live turn. */
  async function answer(text: string) {
    gated.push({ type: 'reasoning', text: 'Let me think.' }, { type: 'token', text });
    gated.finish();
    await userPage.locator('.message.user.live').waitFor({ state: 'detached' });
  }

  // Each check is soft: on a demo that gets several of them wrong, one run names them all.
  it('counts the streaming question, badges a cancelled turn once, remembers completed turns only, opens chats at the latest message', async () => {
    await userPage.goto(gatedHarness.url);
    await ask('I like tea.');
    // The question is saved and its run is pending: the sidebar counts it.
    const firstChat = userPage.locator('.session-item').first();
    await firstChat.waitFor();
    expect
      .soft(await firstChat.locator('.session-item-meta').textContent())
      .toMatch(/^1 message ·/);
    await answer(longAnswer('tea'));

    // A cancelled turn keeps its reasoning and its answer as partial output: one badge.
    await ask('My name is Ada.');
    gated.push(
      { type: 'reasoning', text: 'Checking.' },
      { type: 'tool', toolCallId: 'call_1', name: 'search_notes', args: { query: 'Ada' } },
      { type: 'tool_result', toolCallId: 'call_1', result: { matches: 0 } },
      { type: 'token', text: 'Partial answer' },
    );
    await userPage.locator('.message.assistant.streaming', { hasText: 'Partial answer' }).waitFor();
    await userPage.getByRole('button', { name: 'Cancel', exact: true }).click();
    await userPage.locator('.marker.cancelled').waitFor();
    expect(await userPage.locator('.message.assistant[data-partial="true"]').count()).toBe(2);
    expect
      .soft(await userPage.locator('.transcript .badge', { hasText: 'partial' }).count())
      .toBe(1);

    await ask('I prefer trains.');
    await answer(longAnswer('trains'));
    await ask('I live in Lisbon.');
    await answer(longAnswer('Lisbon'));
    expect.soft(await transcriptAtLatest(userPage), 'at the latest message after a run').toBe(true);

    // A new chat commits the first one's memory: its three completed turns, not the cancelled one.
    await userPage.getByRole('button', { name: '+ New chat' }).click();
    const record = userPage.locator('.memory-record').first();
    await record.waitFor({ timeout: 10_000 });
    const remembered = await record.textContent();
    expect.soft(remembered).toContain('3 completed turns');
    expect.soft(remembered).toContain('I like tea.');
    expect.soft(remembered).toContain('I prefer trains.');
    expect.soft(remembered).toContain('I live in Lisbon.');
    expect.soft(remembered).not.toContain('Ada');

    // Opening a chat (sidebar, reload) shows its latest message.
    await userPage.locator('.session-item', { hasText: 'I like tea.' }).click();
    await userPage.locator('.message.assistant .bubble', { hasText: 'About Lisbon' }).waitFor();
    expect.soft(await transcriptAtLatest(userPage), 'opened from the sidebar').toBe(true);
    await userPage.reload();
    await userPage.locator('.message.assistant .bubble', { hasText: 'About Lisbon' }).waitFor();
    expect.soft(await transcriptAtLatest(userPage), 'opened by a reload').toBe(true);

    // A link to a chat that does not exist says so and leaves no other chat on screen.
    await userPage.evaluate(`location.hash = '#/s/no-such-chat'`);
    await userPage.locator('#stream-status', { hasText: 'no-such-chat' }).waitFor();
    expect.soft(await userPage.locator('#stream-status').textContent()).toContain('no chat');
    expect.soft(await userPage.locator('#chat-title').textContent()).toBe('No chat selected');
    expect.soft(await userPage.locator('.transcript > li').count()).toBe(0);
    expect(pageErrors, pageErrors.join('\n')).toEqual([]);
  });
});

describe('the demo in token mode', () => {
  let tokenHarness: TestServer;
  let tokenPage: Page;
  beforeAll(async () => {
    tokenHarness = await startTestServer({
      config: { agent: { kind: 'scripted', tokenDelayMs: 0, answerWords: 5 } },
    });
    tokenPage = await browser.context.newPage();
    tokenPage.on('pageerror', (error) => pageErrors.push(error.message));
  });
  afterAll(async () => {
    await tokenPage?.close();
    await tokenHarness?.close();
  });

  async function signIn(token: string) {
    await tokenPage.locator('#sign-in').waitFor();
    await tokenPage.locator('#token-input').fill(token);
    await tokenPage.getByRole('button', { name: 'Continue' }).click();
    await tokenPage.locator('#sign-in').waitFor({ state: 'hidden' });
  }

  it('signs out: the token is forgotten and the next token sees only its own chats', async () => {
    await tokenPage.goto(tokenHarness.url);
    await signIn(aliceToken);
    await tokenPage.locator('#composer-input').fill('Alice was here');
    await tokenPage.locator('#send-button').click();
    await tokenPage.locator('.session-item', { hasText: 'Alice was here' }).waitFor();
    // The answer is stored and the page idle (no run followed, no action under way).
    await tokenPage.waitForFunction(`!document.getElementById('send-button').disabled`);

    // A reply of Alice's still on its way at the sign-out, however slow the machine: the
    // list that "+ New chat" loads is held until Alice has signed out.
    const held: Route[] = [];
    let heldOne!: () => void;
    const holding = new Promise<void>((resolve) => {
      heldOne = resolve;
    });
    await tokenPage.route('**/api/sessions', async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      held.push(route);
      heldOne();
    });
    await tokenPage.getByRole('button', { name: '+ New chat' }).click();
    await holding;
    // From the sign-out on, the page records whatever of Alice's it shows again.
    await tokenPage.evaluate(`(() => {
      window.shownAfterSignOut = [];
      const observer = new MutationObserver((records) => {
        for (const record of records) {
          for (const node of record.addedNodes) {
            const text = node.textContent ?? '';
            if (text.includes('Alice was here')) window.shownAfterSignOut.push(text);
          }
        }
      });
      document.addEventListener('click', (event) => {
        if (event.target.closest('#sign-out')) {
          observer.observe(document.body, { childList: true, subtree: true });
        }
      }, { capture: true });
    })()`);

    await tokenPage.getByRole('button', { name: 'Sign out' }).click();
    await tokenPage.locator('#sign-in').waitFor();
    expect(await tokenPage.evaluate(`localStorage.getItem('keepsake.token')`)).toBeNull();
    expect(await tokenPage.locator('.session-item').count()).toBe(0);
    expect(await tokenPage.locator('.transcript > li').count()).toBe(0);

    // Alice's reply arrives now, after the sign-out: the page must drop it.
    const replies = held.map(async (route) => {
      const reply = tokenPage.waitForResponse((response) => response.request() === route.request());
      await route.continue();
      await (await reply).finished();
    });
    await Promise.all(replies);
    await tokenPage.unroute('**/api/sessions');

    // Bob's own chat, and only his, once his list has loaded.
    await signIn(bobToken);
    await tokenPage.locator('#composer-input').fill('Bob was here');
    await tokenPage.locator('#send-button').click();
    await tokenPage.locator('.session-item', { hasText: 'Bob was here' }).waitFor();
    expect(await tokenPage.locator('.session-item').count()).toBe(1);
    expect(await tokenPage.evaluate('window.shownAfterSignOut')).toEqual([]);
    expect(await tokenPage.locator('#sign-in-error').textContent()).not.toContain('not accepted');
    expect(pageErrors, pageErrors.join('\n')).toEqual([]);
  });
});

describe('web demo after a crash before the first token', () => {
  let dataDirectory: string;
  const children: ChildServer[] = [];
  let crashPage: Page;
  beforeAll(async () => {
    dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-browser-first-record-'));
    crashPage = await browser.context.newPage();
    crashPage.on('pageerror', (error) => pageErrors.push(error.message));
  });
  afterAll(async () => {
    await crashPage?.close();
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    await rm(dataDirectory, { recursive: true, force: true });
  });

  it('E1, F1, F2, D4: the open page resumes after the restart, ends the run at its repair, shows the final marker and takes the next message', async () => {
    const environment = {
      KEEPSAKE_DATA_DIR: dataDirectory,
      // The kill lands while the agent waits for its first token: the run journaled nothing.
      KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS: '10000',
      // The marker the repair writes says output may still arrive until a load one grace
      // later makes it final (F2): the page keeps looking until then.
      KEEPSAKE_RECOVERY_GRACE_MS: '2000',
      KEEPSAKE_STREAM_POLL_MS: '50',
    };
    const first = await startChildServer(environment);
    children.push(first);
    await crashPage.goto(first.url);
    await crashPage.locator('#composer-input').fill('Are you there?');
    await crashPage.locator('#send-button').click();
    await crashPage.locator('.message.user.live').waitFor();
    await crashPage.locator('#cancel-button').waitFor();
    await first.kill('SIGKILL');
    // The same address, as a restarted server has: the page reconnects on its own.
    const second = await startChildServer({ ...environment, PORT: new URL(first.url).port });
    children.push(second);

    // F1, D4: the repair seals the run's journal with its crash record (creating it: the
    // run wrote nothing), so the page's stream ends there; the run is over, Cancel goes.
    await crashPage
      .locator('#stream-status', { hasText: 'interrupted before it sent anything' })
      .waitFor({ timeout: 30_000 });
    await crashPage.locator('#cancel-button').waitFor({ state: 'hidden' });
    expect(await crashPage.locator('#send-button').isEnabled()).toBe(true);

    // F2: the page keeps watching the run until its marker is final.
    const marker = crashPage.locator('.marker.interrupted[data-marker-wording="neutral"]');
    await marker.waitFor({ timeout: 30_000 });
    expect(await crashPage.locator('#stream-status').textContent()).toContain(
      'interrupted before it sent anything',
    );
    expect(await crashPage.locator('.message.user', { hasText: 'Are you there?' }).count()).toBe(1);
    const stored = await getSession(second.url, null, sessionIdOf(crashPage.url()));
    expect(stored.messages.at(-1)?.marker).toMatchObject({
      type: 'interrupted',
      wording: 'neutral',
    });

    await crashPage.locator('#composer-input').fill('Still there?');
    await crashPage.locator('#send-button').click();
    await crashPage.locator('.message.user.live', { hasText: 'Still there?' }).waitFor();
    await crashPage.locator('#cancel-button').waitFor();
    expect(pageErrors, pageErrors.join('\n')).toEqual([]);
  });
});
