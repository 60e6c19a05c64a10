import type { LockHold } from './program.js';
import { mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * D1, D2: a task that only takes locks, on the ids of the session slots (also the ids a
 * pending rename will move a slot to), and stays inside for a few scheduling points while
 * saves, renames and other holders race it. Entries and exits go into the history; the
 * runner checks after the round that no two holders of one lock overlapped.
 */
export async function runLockTask(
  world: ModelWorld,
  holds: readonly LockHold[],
  task: string,
): Promise<void> {
  for (const hold of holds) {
    const id = world.slots[hold.slot]!.names[hold.name]!;
    const label = `${task}: withLock(${id}, hold ${hold.hold})`;
    await world.gate(label);
    const holder = world.history.lockCalled(task, id);
    await mustResolve(world, label, () =>
      world.store.withLock(id, async () => {
        holder.entered();
        for (let point = 0; point < hold.hold; point++)
          await world.gate(`${task}: inside withLock(${id})`);
        holder.exited();
      }),
    );
  }
}
