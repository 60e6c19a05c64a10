import { createSessionStore } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { tempDirectory } from './helpers.js';

const SESSIONS = 20;
const TURNS = 5;
const TOKENS = 40;

function pause(): Promise<void> {
  // Small random gaps between tokens, as a model streams them: what lets the journal
  // applier run between one stream's appends and its complete().
  return new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
}

describe('concurrent streams on one fs store', () => {
  it.each(['group', 'each', 'terminal'] as const)(
    'E2/E5: every completed answer is exactly its streamed tokens (20 sessions × 5 turns × 40 tokens at once, %s)',
    async (durability) => {
      const directory = await tempDirectory();
      const store = createSessionStore({
        adapter: fsAdapter({ directory }),
        journal: { durability },
      });
      const ids = Array.from({ length: SESSIONS }, (_, index) => `s${index}`);
      for (const id of ids) await store.create({ id });
      const expected = new Map<string, string[]>();
      await Promise.all(
        ids.map(async (id) => {
          const answers: string[] = [];
          for (let turn = 0; turn < TURNS; turn++) {
            const run = await store.beginRun(id, {
              userMessage: { role: 'user', content: `question ${turn}` },
            });
            let answer = '';
            for (let index = 0; index < TOKENS; index++) {
              const text = `${id}.${turn}.${index} `;
              answer += text;
              await run.append({ type: 'token', data: { text } });
              await pause();
            }
            await run.complete();
            answers.push(answer);
          }
          expected.set(id, answers);
        }),
      );
      const truncated: string[] = [];
      for (const id of ids) {
        const session = await store.load(id);
        const stored = session.messages
          .filter((message) => message.role === 'assistant')
          .map((message) => message.content);
        for (const [turn, answer] of (expected.get(id) ?? []).entries()) {
          if (stored[turn] !== answer)
            truncated.push(
              `${id} turn ${turn}: ${stored[turn]?.length} of ${answer.length} characters`,
            );
        }
        expect(stored).toHaveLength(TURNS);
      }
      expect(truncated).toEqual([]);
      await store.close();
    },
    120_000,
  );
});
