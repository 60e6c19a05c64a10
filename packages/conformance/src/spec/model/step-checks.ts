import type { Session } from '@keepsake/core';
import type { FaultPoint } from './program.js';
import type { SessionModel } from './session-model.js';
import type { ModelWorld } from './world.js';

type ErrorClass = { isInstance(error: unknown): boolean; name: string };

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

export async function attempt<T>(call: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A call the model says must succeed: a rejection fails the run, naming the call. */
export async function mustResolve<T>(
  world: ModelWorld,
  label: string,
  call: () => Promise<T>,
): Promise<T> {
  const outcome = await attempt(call);
  if (outcome.ok) {
    world.history.note(`${label} → ok`);
    return outcome.value;
  }
  world.history.note(`${label} → rejected: ${describeError(outcome.error)}`);
  world.expectTypedRejection(outcome.error, label);
  return world.fail(
    `${label} rejected, but the model says it succeeds: ${describeError(outcome.error)}`,
  );
}

/**
 * What a refused or failed call must leave as it was (B4, B5: "a refused write changes
 * nothing"): the stored document and the live session the application gets from `load`.
 */
interface Snapshot {
  stored: unknown;
  live: Session | null;
  liveView: unknown;
}

async function snapshotOf(world: ModelWorld, model: SessionModel): Promise<Snapshot> {
  // Load first: a load may finish a crash repair (F1, F2) and write it; that is the store's
  // own doing, done before the stored document is read.
  const live = model.exists ? await world.store.load(model.id) : null;
  const persisted = await world.stored(model.id);
  // A live run's checkpoint may refresh the heartbeat (and the revision) at any time: only
  // the transcript and the owner of the pending turn must stay as they were.
  const running = model.abandoned !== null || persisted?.session.pending != null;
  const stored =
    persisted === null
      ? null
      : {
          revision: running ? 'live run' : persisted.revision,
          ...projection(persisted.session),
        };
  return { stored, live, liveView: live === null ? null : projection(live) };
}

function projection(session: Session) {
  return {
    title: session.title,
    pendingStream: session.pending?.streamId ?? null,
    rotatedTo: session.rotatedTo,
    messages: session.messages.map((message) => ({
      id: message.id,
      role: message.role,
      content: message.content,
    })),
  };
}

async function expectUnchanged(
  world: ModelWorld,
  model: SessionModel,
  before: Snapshot,
  label: string,
): Promise<void> {
  const after = await snapshotOf(world, model);
  world.expectEqual(
    after.stored,
    before.stored,
    `${label} was refused, so what is stored is as before`,
  );
  if (after.live !== before.live) {
    world.fail(
      `${label} was refused, so load() returns the same live object as before (it returned another one: ${JSON.stringify(after.liveView)})`,
    );
  }
  world.expectEqual(
    after.liveView,
    before.liveView,
    `${label} was refused, so the live session is as before`,
  );
}

/** A call the model says must be refused with one of `classes`, changing nothing. */
export async function mustRefuse(
  world: ModelWorld,
  model: SessionModel,
  label: string,
  classes: readonly ErrorClass[],
  call: () => Promise<unknown>,
): Promise<void> {
  const before = await snapshotOf(world, model);
  const outcome = await attempt(call);
  if (outcome.ok) {
    world.history.note(`${label} → resolved`);
    world.fail(
      `${label} resolved, but the model says it is refused with ${classes.map((errorClass) => errorClass.name).join(' or ')}`,
    );
  }
  const error = (outcome as { error: unknown }).error;
  world.history.note(`${label} → refused: ${describeError(error)}`);
  world.expectTypedRejection(error, label, classes);
  await expectUnchanged(world, model, before, label);
}

/**
 * A call that may meet a transient fault. Without one it must succeed. With one it may
 * still succeed (the store retried), or be rejected with a typed error, changing nothing
 * (B2: a write that did not land is never reported as done, and one reported as failed
 * did not land); then the same call is retried without the fault and must succeed.
 * `unchanged: false` for calls documented as finishing on retry (rename, D2).
 */
export async function faultable<T>(
  world: ModelWorld,
  model: SessionModel,
  fault: FaultPoint | undefined,
  label: string,
  call: () => Promise<T>,
  options: { unchanged?: boolean; sessionId?: string } = {},
): Promise<T> {
  if (fault === undefined) return mustResolve(world, label, call);
  const sessionId = options.sessionId ?? model.id;
  return underFault(world, model, async () => world.arm(fault, sessionId), label, call, options);
}

/**
 * `faultable` with the fault armed by `arm` (which returns the function removing it, or
 * null when the fault cannot be injected: then the call simply must succeed).
 */
export async function underFault<T>(
  world: ModelWorld,
  model: SessionModel,
  arm: () => Promise<(() => void) | null>,
  label: string,
  call: () => Promise<T>,
  options: { unchanged?: boolean } = {},
): Promise<T> {
  const check = options.unchanged !== false;
  const before = check ? await snapshotOf(world, model) : null;
  const disarm = await arm();
  if (disarm === null) {
    world.history.note(`${label}: the fault cannot be injected on this backend`);
    return mustResolve(world, label, call);
  }
  let outcome: Outcome<T>;
  try {
    outcome = await attempt(call);
  } finally {
    disarm();
  }
  if (outcome.ok) {
    world.history.note(`${label} under a fault → ok`);
    return outcome.value;
  }
  world.history.note(`${label} under a fault → rejected: ${describeError(outcome.error)}`);
  world.expectTypedRejection(outcome.error, `${label} under a transient fault`);
  if (before !== null)
    await expectUnchanged(world, model, before, `${label} under a transient fault`);
  return mustResolve(world, `retry of ${label}`, call);
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
