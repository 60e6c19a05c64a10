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
    id: 'C3:model',
    profile: 'everything',
    title:
      'model-based: random concurrent mix of every operation, faults and restarts: a fresh store always sees what the model acknowledged, and no rejection goes unhandled (A–F)',
  },
];

export function defineModelBased(suite: SpecRegistrar): void {
  const settings = (): ModelSettings =>
    modelSettings(suite.context.modelRuns, suite.context.testTimeoutMs);
  defineSequentialModel(suite, settings);
  for (const test of RANDOMIZED) {
    suite.test(test.id, test.title, () => checkProfile(suite, test, settings()), {
      timeoutMs: settings().timeoutMs,
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
