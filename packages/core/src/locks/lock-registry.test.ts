import { describe, expect, it } from 'vitest';
import { LockReentryError } from '../errors/input-errors.js';
import { LockRegistry } from './lock-registry.js';

describe('LockRegistry', () => {
  it('D1: serializes holders of one id', async () => {
    const locks = new LockRegistry();
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = locks.withLock('a', async () => {
      order.push('first in');
      await new Promise<void>((resolve) => {
        releaseFirst = resolve;
      });
      order.push('first out');
    });
    const second = locks.withLock('a', async () => {
      order.push('second in');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first in']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  it('D1: re-entry from the holding async context is a typed error, not a deadlock', async () => {
    const locks = new LockRegistry();
    await expect(
      locks.withLock('a', () => locks.withLock('a', async () => 'never')),
    ).rejects.toSatisfy(LockReentryError.isInstance);
    // The lock is usable afterwards.
    await expect(locks.withLock('a', async () => 'ok')).resolves.toBe('ok');
  });

  it('D1: idle entries are pruned, held or awaited ones are not', async () => {
    const locks = new LockRegistry();
    for (let index = 0; index < 100; index++) await locks.withLock(`s${index}`, async () => {});
    expect(locks.size).toBe(0);
    let release!: () => void;
    const held = locks.withLock('busy', () => new Promise<void>((resolve) => (release = resolve)));
    const waiting = locks.withLock('busy', async () => {});
    await new Promise((resolve) => setImmediate(resolve));
    expect(locks.size).toBe(1);
    release();
    await Promise.all([held, waiting]);
    expect(locks.size).toBe(0);
  });

  it('D2: a rotated id maps to the mutex held under the old id', async () => {
    const locks = new LockRegistry();
    const events: string[] = [];
    let release!: () => void;
    const holder = locks.withLock('old', async () => {
      locks.alias('new', 'old');
      events.push('holding old');
      await new Promise<void>((resolve) => (release = resolve));
      events.push('released old');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(locks.identity('new')).toBe(locks.identity('old'));
    const viaNew = locks.withLock('new', async () => {
      events.push('acquired new');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['holding old']);
    release();
    await Promise.all([holder, viaNew]);
    expect(events).toEqual(['holding old', 'released old', 'acquired new']);
  });

  it('D2: aliasing after the old id was pruned still shares one mutex', async () => {
    const locks = new LockRegistry();
    await locks.withLock('old', async () => {});
    expect(locks.size).toBe(0);
    locks.alias('new', 'old');
    expect(locks.identity('new')).toBe(locks.identity('old'));
  });

  it('detached work does not inherit the held lock', async () => {
    const locks = new LockRegistry();
    let background: Promise<string> | undefined;
    await locks.withLock('a', async () => {
      background = locks.detached(
        () =>
          new Promise<string>((resolve) =>
            setTimeout(() => resolve(locks.withLock('a', async () => 'ran')), 0),
          ),
      );
    });
    await expect(background).resolves.toBe('ran');
  });

  it('D1: withLockUnmarked serializes with every other holder of the id', async () => {
    const locks = new LockRegistry();
    const order: string[] = [];
    let release!: () => void;
    const holder = locks.withLock('a', async () => {
      order.push('holder in');
      await new Promise<void>((resolve) => (release = resolve));
      order.push('holder out');
    });
    const save = locks.withLockUnmarked('a', async () => {
      order.push('save in');
      await new Promise((resolve) => setImmediate(resolve));
      order.push('save out');
    });
    const after = locks.withLock('a', async () => {
      order.push('after in');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['holder in']);
    release();
    await Promise.all([holder, save, after]);
    expect(order).toEqual(['holder in', 'holder out', 'save in', 'save out', 'after in']);
    expect(locks.size).toBe(0);
  });

  it('D1: withLockUnmarked runs inside a context that holds the lock, and marks none', async () => {
    const locks = new LockRegistry();
    // Inside the holder's context: run at once (waiting would be waiting for itself).
    const nested = await locks.withLock('a', () =>
      locks.withLockUnmarked('a', async () => locks.holds('a')),
    );
    expect(nested).toBe(true);
    // Not marked: a call made from inside waits for its turn instead of entering beside it,
    // and gets it once the unmarked call returns (as an event listener's would).
    const order: string[] = [];
    let inner: Promise<void> | undefined;
    await locks.withLockUnmarked('b', async () => {
      order.push(`outer holds: ${locks.holds('b')}`);
      inner = locks.withLock('b', async () => {
        order.push('inner');
      });
      await new Promise((resolve) => setImmediate(resolve));
      order.push('outer out');
    });
    await inner;
    expect(order).toEqual(['outer holds: false', 'outer out', 'inner']);
  });
});
