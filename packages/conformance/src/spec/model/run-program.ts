import type fc from 'fast-check';
import type { TestEnvironment } from '../../harness/environment.js';
import { drainCallbacks } from '../../harness/fixtures.js';
import { runCopyStep } from './copy-steps.js';
import { runDamagedLive } from './damaged-journal-steps.js';
import { runDeadRun } from './dead-run-steps.js';
import { runFence } from './fence-steps.js';
import { runForeignCancel } from './foreign-cancel-steps.js';
import { runLockTask } from './lock-steps.js';
import { nameStep, type PlannedStep, type Program } from './program.js';
import { runRepairRace } from './repair-race-steps.js';
import { runInterlude } from './restart-steps.js';
import type { SessionModel } from './session-model.js';
import { runSessionStep } from './session-steps.js';
import { describeError } from './step-checks.js';
import { runStreamStep } from './stream-steps.js';
import { ModelWorld } from './world.js';

/**
 * One generated run: rounds of concurrent tasks (one per session slot, plus lock tasks),
 * every interleaving chosen by fast-check's scheduler, checks after every step, after
 * every round (lock holders, what is stored) and after every restart (a fresh store), and
 * a final graceful restart. Any unhandled rejection during the run fails it.
 */
export async function runProgram(
  env: TestEnvironment,
  program: Program,
  scheduler: fc.Scheduler,
): Promise<void> {
  const world = new ModelWorld(env, program.config, scheduler);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => {
    unhandled.push(reason);
    world.history.note(`UNHANDLED REJECTION: ${describeError(reason)}`);
  };
  process.on('unhandledRejection', onUnhandled);
  try {
    await scheduler.waitFor(drive(world, program));
    // Rejections of promises nobody awaited surface a few turns later.
    await drainCallbacks(20);
    if (unhandled.length > 0) {
      world.fail(
        `${unhandled.length} unhandled rejection(s) during the run (no rejection may go unhandled anywhere in the library): ${unhandled.map(describeError).join('; ')}`,
      );
    }
  } catch (error) {
    throw withHistory(error, world);
  } finally {
    world.stopScheduling();
    await scheduler.waitIdle();
    process.off('unhandledRejection', onUnhandled);
  }
}

async function drive(world: ModelWorld, program: Program): Promise<void> {
  await world.open();
  for (const [index, round] of program.rounds.entries()) {
    world.history.note(`── round ${index + 1} ──`);
    const tasks = [
      ...round.tasks.map((steps, slot) => runTask(world, world.slots[slot]!, steps)),
      ...round.lockTasks.map((holds, number) => runLockTask(world, holds, `locks ${number}`)),
    ];
    // Every task runs to its end even when one fails, so nothing is left waiting.
    const settled = await Promise.allSettled(tasks);
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const violations = world.history.lockViolations();
    if (violations.length > 0) {
      world.fail(`D1, D2: two holders of one lock at once: ${violations.join('; ')}`);
    }
    world.history.note(`── after round ${index + 1}: ${round.afterwards} ──`);
    await runInterlude(world, round.afterwards);
  }
  // Whatever happened, a graceful restart sees every edit and every answer (C1, C2, C3).
  world.history.note('── final graceful restart ──');
  await runInterlude(world, 'close');
}

async function runTask(
  world: ModelWorld,
  model: SessionModel,
  steps: readonly PlannedStep[],
): Promise<void> {
  for (const planned of steps) {
    const label = `slot ${model.slot} (${model.id}): ${nameStep(planned)}`;
    // A slot whose run was left live waits for the next restart to recover it.
    if (model.abandoned !== null) {
      world.history.note(`${label}: skipped, a run is left live`);
      continue;
    }
    await world.gate(label);
    const { step } = planned;
    switch (step.kind) {
      case 'copy':
        await runCopyStep(world, model, step, planned.fault, label);
        break;
      case 'stream':
        await runStreamStep(world, model, step.stream, label);
        break;
      case 'foreignCancel':
        await runForeignCancel(world, model, step.plan, label);
        break;
      case 'fence':
        await runFence(world, model, step.plan, label);
        break;
      case 'repairRace':
        await runRepairRace(world, model, step.plan, label);
        break;
      case 'damagedLive':
        await runDamagedLive(world, model, step.plan, label);
        break;
      case 'deadRun':
        await runDeadRun(world, model, step.plan, label);
        break;
      default:
        await runSessionStep(world, model, step, planned.fault, label);
    }
  }
}

function withHistory(error: unknown, world: ModelWorld): Error {
  const message = error instanceof Error ? error.message : String(error);
  const wrapped = new Error(
    `${message}\n\nHistory of the run (logical time #):\n${world.history.tail()}`,
    {
      cause: error,
    },
  );
  if (error instanceof Error && error.stack !== undefined) {
    wrapped.stack = `${wrapped.message}\n${error.stack.split('\n').slice(1).join('\n')}`;
  }
  return wrapped;
}
