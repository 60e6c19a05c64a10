import { createMessage, createSessionStore, type Session, type SessionStore } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { type FileSystem, fsAdapter } from '../src/index.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';

// F1, C3: a load's repair of a crashed turn is written without a flush of its own (core's
// load-recovery.ts says why): it is re-derivable from what is durable, and whatever builds
// on it durably makes it durable first. These tests lose the power right after a repair.

/**
 * FAULT INJECTION: one process's view of the simulated disk. `kill()` is the process dying:
 * every later call of it fails (EIO), so timers it left behind touch nothing.
 */
function processOn(disk: FaultInjectingFileSystem): { store: SessionStore; kill(): void } {
  let killed = false;
  const dead = () => Object.assign(new Error('the process is gone'), { code: 'EIO' });
  const fileSystem = new Proxy(disk, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (!killed) return value.apply(target, args);
        if (String(property).endsWith('Sync')) throw dead();
        return Promise.reject(dead());
      };
    },
  }) as FileSystem;
  const store = createSessionStore({
    adapter: fsAdapter({ directory: '/store', fileSystem }),
    journal: { durability: 'group' },
    recovery: { graceMs: 0 },
  });
  return {
    store,
    kill: () => {
      killed = true;
    },
  };
}

/** What a reader sees of a transcript: roles, texts and markers (not ids or times). */
function transcript(session: Session) {
  return session.messages.map((message) => ({
    role: message.role,
    content: message.content,
    marker: message.marker?.type ?? null,
  }));
}

describe('recovery and power loss', () => {
  it('F1, C3: a repair a power loss takes is made again by the next load, and a durable save on top of it keeps it (fault injection)', async () => {
    const disk = faultInjectingFileSystem();
    // A run streams three durable tokens; then the machine loses power mid-run.
    const first = processOn(disk);
    const session = await first.store.create({ title: 'power' }, { fsync: true });
    const run = await first.store.beginRun(session.id, {
      userMessage: { role: 'user', content: 'question' },
    });
    for (const text of ['a', 'b', 'c']) await run.append({ type: 'token', data: { text } });
    first.kill();
    disk.simulatePowerLoss({ tornTails: true });

    // A load repairs the turn; the power fails again before anything flushed the repair.
    const second = processOn(disk);
    const repaired = await second.store.load(session.id);
    expect(repaired.pending).toBeNull();
    const expected = transcript(repaired);
    expect(expected).toContainEqual({ role: 'assistant', content: 'abc', marker: null });
    expect(expected.filter((message) => message.marker !== null)).toHaveLength(1);
    second.kill();
    disk.simulatePowerLoss({ tornTails: true });

    // The next load finds the pending turn and the journal as they were made durable, and
    // makes the same repair again.
    const third = processOn(disk);
    const repairs: string[] = [];
    third.store.on((event) => {
      if (event.type === 'recovery') repairs.push(event.outcome);
    });
    const again = await third.store.load(session.id);
    expect(repairs).toEqual(['recovered']);
    expect(again.pending).toBeNull();
    expect(transcript(again)).toEqual(expected);

    // A durable save that builds on the repair makes the repair durable with it.
    again.messages.push(createMessage({ role: 'user', content: 'next question' }));
    await third.store.save(again, { fsync: true });
    const ids = again.messages.map((message) => message.id);
    third.kill();
    disk.simulatePowerLoss({ tornTails: true });

    const fourth = processOn(disk);
    const kept = await fourth.store.load(session.id);
    expect(kept.messages.map((message) => message.id)).toEqual(ids);
    expect(transcript(kept)).toEqual([
      ...expected,
      { role: 'user', content: 'next question', marker: null },
    ]);
    await fourth.store.close();
  });
});
