/**
 * The model-based section: randomized, seeded, shrinking properties that drive many
 * sessions and runs at once through the public API and compare every result with a small
 * reference model (files in ./model/, see model/program.ts for the map). Each test draws
 * from one profile of operations and is named by the clause it leans on; the clauses each
 * one checks are listed in its title.
 */
import fc from 'fast-check';
import { TestEnvironment } from '../harness/environment.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { type ProfileName, programs } from './model/arbitraries.js';
import { checkWithBoundedShrinking } from './model/check-property.js';
import { describeProgram, type Program } from './model/program.js';
import { runProgram } from './model/run-program.js';
import { defineSequentialModel } from './model/sequential-commands.js';
import { type ModelSettings, modelSettings } from './model/settings.js';

interface RandomizedTest {
  /** Clause id with the key an adapter can name in a declared gap. */
  readonly id: string;
  readonly profile: ProfileName;
  readonly title: string;
  /**
   * The share of the suite's `modelRuns` this test makes by default (each of its steps is a
   * whole scenario with two instances, a worker that dies or planted records, and on a real
   * backend another instance's journal append may wait for a writer's lease). The soak run
   * and KEEPSAKE_MODEL_RUNS set the count of every test alike. @default 1
   */
  readonly runShare?: number;
}

const RANDOMIZED: readonly RandomizedTest[] = [
  {
    id: 'C4:model',
    profile: 'sessions',
    title:
      'model-based: random concurrent sessions with a tiny cache: held objects stay the live session through evictions and every edit is kept; copies, stale objects and summary spreads are accepted or refused as B4/B5 say, and a refused save changes nothing (B4, B5, B8, C1, C3, C4)',
  },
  {
    id: 'E2:model',
    profile: 'streams',
    title:
      'model-based: random concurrent streams at every journal durability: each stored answer is exactly the tokens whose append resolved, with the question and its attachments, after complete, cancel, fail, a restart or crash recovery (E1, E2, E5, E6, F1, C3)',
  },
  {
    id: 'D2:model',
    profile: 'locks',
    title:
      'model-based: random withLock holders racing renames and saves: never two holders of one lock, also across a pending or finished rename; parents keep their transcript (D1, D2, B7)',
  },
  {
    id: 'B2:model',
    profile: 'faults',
    title:
      'model-based: random transient backend faults (EIO) during saves, creates, loads, deletes, renames and streams: a failed call is a typed error and changes nothing, its retry succeeds, nothing acknowledged is lost, flushAll and close report no failure (B1, B2, B3, B4, C1, E2, E5, E6)',
  },
  {
    id: 'E6:model',
    profile: 'instances',
    runShare: 0.25,
    title:
      "model-based: two store instances on one namespace: a cancel from the other instance racing queued appends wins and keeps exactly the acknowledged tokens, a run fenced out by the other instance's crash repair past the grace period learns it, its late output is folded in only while its turn is the last one answered and never rewrites a later answered turn, a cancel or failure racing a repair ends with one marker agreeing with the journal; no duplicates after repeated loads and restarts (E6, D4, F1, F2, F3, F4, E2)",
  },
  {
    id: 'F2:model',
    profile: 'journals',
    runShare: 0.25,
    title:
      "model-based: late, damaged and foreign journal records planted through a raw adapter: a damaged record in a live run's journal is skipped and reported while the run appends, completes and seals; a dead run's journal is folded in with one marker agreeing with it, foreign or damaged records never trusted (a warning, the generic marker), a run that died before its first record settles neutral and a late journal is still folded, late output never above a later answered turn; tool calls scoped by run (F1, F2, F4, E2, E3, D4)",
  },
  {
    id: 'C3:model',
    profile: 'everything',
    title:
      'model-based: random concurrent mix of every operation, faults and restarts: a fresh store always sees what the model acknowledged, and no rejection goes unhandled (A–F)',
  },
];

export function defineModelBased(suite: SpecRegistrar): void {
  const { modelRuns } = suite.context;
  // A share keeps at least 3 runs, never more than the suite asked for.
  const runsOf = (runShare: number): number =>
    runShare >= 1 ? modelRuns : Math.min(modelRuns, Math.max(3, Math.round(modelRuns * runShare)));
  const settings = (runShare = 1): ModelSettings =>
    modelSettings(runsOf(runShare), suite.context.testTimeoutMs);
  defineSequentialModel(suite, () => settings());
  for (const test of RANDOMIZED) {
    suite.test(test.id, test.title, () => checkProfile(suite, test, settings(test.runShare)), {
      timeoutMs: settings(test.runShare).timeoutMs,
    });
  }
}

async function checkProfile(
  suite: SpecRegistrar,
  test: RandomizedTest,
  settings: ModelSettings,
): Promise<void> {
  const property = fc.asyncProperty(
    programs(test.profile, settings.size).map(printable),
    fc.scheduler(),
    async (program, scheduler) => {
      const env = new TestEnvironment(suite.context);
      let passed = false;
      try {
        await runProgram(env, program, scheduler);
        passed = true;
      } finally {
        // A failed run's own error matters more than its cleanup.
        if (passed) await env.dispose();
        else await env.dispose().catch(() => undefined);
      }
    },
  );
  const details = await checkWithBoundedShrinking(property, settings);
  if (!details.failed) return;
  const clause = test.id.split(':')[0];
  const error = details.errorInstance;
  throw new Error(
    [
      fc.defaultReportMessage(details),
      `What failed in the shrunk counterexample:\n${error instanceof Error ? error.message : String(error)}`,
      `Reproduce this counterexample:\n  KEEPSAKE_MODEL_SEED=${details.seed} KEEPSAKE_MODEL_PATH=${details.counterexamplePath ?? ''} vitest run -t "${clause}: model-based"`,
    ].join('\n\n'),
    { cause: error },
  );
}

/** Programs print as a readable plan in counterexamples. */
function printable(program: Program): Program {
  return Object.defineProperty({ ...program }, fc.toStringMethod, {
    value: () => describeProgram(program),
    enumerable: false,
  });
}
