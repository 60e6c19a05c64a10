/**
 * B1, E2, issue 42 item 2: text beyond Latin-1 is read back exactly. An adapter that stored
 * text as Latin-1 (a column charset, a `binary` Buffer conversion) passed every test, because
 * the only test that wrote "é ✓" overwrote it before reading. Every plane (the BMP and astral
 * characters: emoji, CJK Extension B), combining marks, right-to-left text, `\u0000` and the
 * JSON escapes go into titles, metadata, messages and journal records, and are read back
 * through a new store, the listing and the journal.
 */
import { expect } from 'vitest';
import { contentsOf, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** One sample per kind of text, each named so a failure says which one was mangled. */
export const UNICODE_SAMPLES = {
  bmp: 'Grüße Привет γειά 你好 こんにちは 한국어 ₩€£ ✓',
  astral: 'emoji 😀🎉 family 👩‍👩‍👧‍👦 flag 🏳️‍🌈 CJK Ext B 𠀀𠀁𪛖 music 𝄞',
  combining: 'e\u0301 a\u0308 n\u0303 Z\u0324\u0354\u0367\u0311\u0313 \u0e01\u0e34',
  rtl: 'שלום עולם مرحبا بالعالم \u202Eabc\u202C \u200F',
  nul: 'before\u0000after',
  escapes:
    'quote " backslash \\ slash / newline \n tab \t cr \r bs \b ff \f ctl \u0001\u001f del \u007f ls \u2028 ps \u2029',
} as const;

const EVERYTHING = Object.values(UNICODE_SAMPLES).join(' | ');

/** Which samples differ, so the failure names the kind of text an adapter mangled. */
function mangled(actual: unknown, expected: string): string[] {
  if (actual === expected) return [];
  if (typeof actual !== 'string') return [`not a string: ${typeof actual}`];
  const kinds = Object.entries(UNICODE_SAMPLES)
    .filter(([, sample]) => !actual.includes(sample))
    .map(([kind]) => kind);
  return kinds.length > 0 ? kinds : ['the text around the samples'];
}

function expectExact(actual: unknown, expected: string, what: string): void {
  expect(mangled(actual, expected), `${what}: these samples came back changed`).toEqual([]);
}

export function defineUnicodeTests(suite: SpecRegistrar): void {
  suite.test(
    'B1',
    'titles, metadata and messages beyond Latin-1 (astral, combining, RTL, \\u0000, JSON escapes) are read back exactly, in full and as a delta',
    async (env) => {
      const opened = await env.openStore();
      const title = `title ${EVERYTHING}`;
      const session = await opened.store.create(
        {
          id: env.id(),
          title,
          metadata: { note: EVERYTHING, [`key ${UNICODE_SAMPLES.astral}`]: UNICODE_SAMPLES.rtl },
          messages: [textMessage(env, 'user', `first ${EVERYTHING}`)],
        },
        { fsync: true },
      );
      // A second message after the first write: a delta where the adapter has them.
      session.messages.push(textMessage(env, 'assistant', `second ${EVERYTHING}`));
      await opened.store.save(session, { fsync: true });

      const reopened = await env.restartGracefully(opened);
      const loaded = await reopened.store.load(session.id);
      expectExact(loaded.title, title, 'the title');
      expectExact(loaded.metadata.note, EVERYTHING, 'a metadata value');
      expectExact(
        loaded.metadata[`key ${UNICODE_SAMPLES.astral}`],
        UNICODE_SAMPLES.rtl,
        'a metadata value under a key beyond Latin-1',
      );
      const [first, second] = contentsOf(loaded);
      expectExact(first, `first ${EVERYTHING}`, 'the message written in full');
      expectExact(second, `second ${EVERYTHING}`, 'the message saved after it');
      const listed = (await reopened.store.list({ limit: 1000 })).sessions.find(
        (entry) => entry.id === session.id,
      );
      expectExact(listed?.title, title, 'the title in the listing');
    },
  );

  suite.test(
    'E2',
    'journal records beyond Latin-1 (astral, combining, RTL, \\u0000, JSON escapes) are read back exactly, live, by a new store and in the recovered answer',
    async (env) => {
      const opened = await env.openStore({ journal: { durability: 'each' } });
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const question = `question ${EVERYTHING}`;
      const run = await opened.store.beginRun(session.id, { userMessage: userInput(question) });
      const tokens = Object.values(UNICODE_SAMPLES);
      for (const text of tokens) await run.append({ type: 'token', data: { text } });
      const readTokens = async (store: typeof opened.store) =>
        (await store.readJournal(session.id, run.runId)).records
          .filter((record) => record.type === 'token')
          .map((record) => (record.data as { text?: unknown }).text);
      const live = await readTokens(opened.store);
      for (const [index, text] of tokens.entries()) {
        expectExact(live[index], text, `token ${index} read back live`);
      }
      // The process dies (no power loss: this is about what is stored, not what is durable).
      env.killProcess(opened);
      const reopened = await env.openStore();
      const afterDeath = await readTokens(reopened.store);
      for (const [index, text] of tokens.entries()) {
        expectExact(afterDeath[index], text, `token ${index} read by a new store`);
      }
      await env.clock.advance(60_000);
      const loaded = await reopened.store.load(session.id);
      const recovered = loaded.messages.find(
        (message) => message.role === 'assistant' && message.recovered === true,
      );
      expectExact(contentsOf(loaded)[0], question, 'the question');
      expectExact(recovered?.content, tokens.join(''), 'the recovered answer');
    },
  );
}
