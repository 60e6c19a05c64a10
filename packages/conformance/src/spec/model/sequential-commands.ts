import {
  AlreadyExistsError,
  NotFoundError,
  type Session,
  ShrinkRefusedError,
} from '@keepsake/core';
import fc from 'fast-check';
import { expect } from 'vitest';
import { type OpenedStore, TestEnvironment } from '../../harness/environment.js';
import { contentsOf, expectTypedError, textMessage } from '../../harness/fixtures.js';
import type { SpecRegistrar } from '../../harness/suite.js';
import type { ModelSettings } from './settings.js';

/**
 * The model: what each session holds in the live store (`working`) and what is stored
 * (`persisted`). Deliberately simple, so a disagreement points at the store.
 */
interface Model {
  sessions: Map<string, { working: string[]; persisted: string[] }>;
}

interface Real {
  env: TestEnvironment;
  opened: OpenedStore;
  ids: readonly string[];
}

type Command = fc.AsyncCommand<Model, Real>;

const text = fc.string({ minLength: 1, maxLength: 12 });
const texts = fc.array(text, { minLength: 1, maxLength: 3 });
const slot = fc.nat({ max: 1 });

class CreateCommand implements Command {
  constructor(
    readonly slot: number,
    readonly contents: string[],
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const messages = this.contents.map((content) => textMessage(real.env, 'user', content));
    if (model.sessions.has(id)) {
      await expectTypedError(real.opened.store.create({ id, messages }), AlreadyExistsError);
      return;
    }
    await real.opened.store.create({ id, messages });
    model.sessions.set(id, { working: [...this.contents], persisted: [...this.contents] });
  }
  toString = () => `create(${this.slot}, ${JSON.stringify(this.contents)})`;
}

class AppendCommand implements Command {
  constructor(
    readonly slot: number,
    readonly contents: string[],
  ) {}
  check = (model: Readonly<Model>) => model.sessions.size > 0;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const state = model.sessions.get(id);
    if (state === undefined) return;
    const session = await real.opened.store.load(id);
    for (const content of this.contents)
      session.messages.push(textMessage(real.env, 'assistant', content));
    state.working.push(...this.contents);
  }
  toString = () => `append(${this.slot}, ${JSON.stringify(this.contents)})`;
}

class SaveCommand implements Command {
  constructor(
    readonly slot: number,
    readonly fsync: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const state = model.sessions.get(id);
    if (state === undefined) return;
    await real.opened.store.save(await real.opened.store.load(id), { fsync: this.fsync });
    state.persisted = [...state.working];
  }
  toString = () => `save(${this.slot}, fsync: ${this.fsync})`;
}

class UndoCommand implements Command {
  constructor(
    readonly slot: number,
    readonly count: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const state = model.sessions.get(id);
    if (state === undefined || state.working.length === 0) return;
    const session = await real.opened.store.load(id);
    session.messages.splice(-this.count, this.count);
    state.working.splice(-this.count, this.count);
    await real.opened.store.save(session, { allowShrink: true });
    state.persisted = [...state.working];
  }
  toString = () => `undo(${this.slot}, ${this.count})`;
}

/** Removes a stored message without allowShrink: refused, then put back (B5). */
class RefusedShrinkCommand implements Command {
  constructor(readonly slot: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const state = model.sessions.get(id);
    if (state === undefined || state.persisted.length === 0) return;
    const session: Session = await real.opened.store.load(id);
    const [removed] = session.messages.splice(0, 1);
    await expectTypedError(real.opened.store.save(session), ShrinkRefusedError);
    session.messages.splice(0, 0, removed!);
  }
  toString = () => `refusedShrink(${this.slot})`;
}

class DeleteCommand implements Command {
  constructor(readonly slot: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    expect(await real.opened.store.delete(id)).toBe(model.sessions.has(id));
    model.sessions.delete(id);
  }
  toString = () => `delete(${this.slot})`;
}

/** A graceful restart: close() flushes what is in memory, a new store opens. */
class ReloadCommand implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    await real.env.closeStore(real.opened);
    real.opened = await real.env.openStore();
    for (const state of model.sessions.values()) state.persisted = [...state.working];
  }
  toString = () => 'reload()';
}

/** The process dies (the machine does not): a new store sees what was saved. */
class KillCommand implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    real.env.killProcess(real.opened);
    real.opened = await real.env.openStore();
    for (const state of model.sessions.values()) state.working = [...state.persisted];
  }
  toString = () => 'kill()';
}

class LoadCommand implements Command {
  constructor(readonly slot: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = real.ids[this.slot]!;
    const state = model.sessions.get(id);
    if (state === undefined) {
      await expectTypedError(real.opened.store.load(id), NotFoundError);
      return;
    }
    expect(contentsOf(await real.opened.store.load(id))).toEqual(state.working);
  }
  toString = () => `load(${this.slot})`;
}

class ListCommand implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    const { sessions } = await real.opened.store.list({ limit: 1000 });
    const listed = sessions
      .filter((entry) => real.ids.includes(entry.id))
      .map((entry) => [entry.id, entry.messageCount] as const)
      .sort();
    const expected = [...model.sessions.entries()]
      .map(([id, state]) => [id, state.persisted.length] as const)
      .sort();
    expect(listed).toEqual(expected);
  }
  toString = () => 'list()';
}

const create = fc
  .tuple(slot, fc.array(text, { maxLength: 3 }))
  .map(([at, contents]) => new CreateCommand(at, contents));
const append = fc.tuple(slot, texts).map(([at, contents]) => new AppendCommand(at, contents));
const save = fc.tuple(slot, fc.boolean()).map(([at, fsync]) => new SaveCommand(at, fsync));

/** Creates, appends and saves are listed more than once: they make the other commands bite. */
const commands = [
  create,
  create,
  append,
  append,
  append,
  save,
  save,
  fc.tuple(slot, fc.integer({ min: 1, max: 2 })).map(([at, count]) => new UndoCommand(at, count)),
  slot.map((at) => new RefusedShrinkCommand(at)),
  slot.map((at) => new DeleteCommand(at)),
  slot.map((at) => new LoadCommand(at)),
  fc.constant(new ReloadCommand()),
  fc.constant(new KillCommand()),
  fc.constant(new ListCommand()),
];

/**
 * The first model-based test of the suite: two sessions, one command at a time, saves
 * only. Kept beside the randomized concurrent section (../model-based.ts) because its
 * sequences shrink to the shortest reproductions of single-caller mistakes.
 */
export function defineSequentialModel(suite: SpecRegistrar, settings: () => ModelSettings): void {
  suite.test(
    'C3:model',
    'model-based: random create/append/save/undo/reload/delete/list sequences match a simple model',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.commands(commands, { maxCommands: 40, size: 'large' }),
          async (sequence) => {
            const env = new TestEnvironment(suite.context);
            try {
              const ids = [env.id('model'), env.id('model')];
              const real: Real = { env, opened: await env.openStore(), ids };
              const model: Model = { sessions: new Map() };
              await fc.asyncModelRun(() => ({ model, real }), sequence);
              // Whatever happened, a graceful restart sees exactly what the model holds.
              await new ReloadCommand().run(model, real);
              for (let at = 0; at < ids.length; at++) await new LoadCommand(at).run(model, real);
              await new ListCommand().run(model, real);
            } finally {
              await env.dispose();
            }
          },
        ),
        settings().parameters,
      );
    },
  );
}
