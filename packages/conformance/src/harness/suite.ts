import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { type ClauseId, DECLARED_GAP_MARKER, isClauseId } from '../clauses.js';
import type { AreaName, ConformanceInitializer, ConformanceOptions } from '../types.js';
import { type SuiteContext, TestEnvironment, uniqueNamespace } from './environment.js';
import { explainLikelyHookFault } from './hook-faults.js';
import { LOSSLESS_CRASH_NOTE, markNotVerified, NOT_VERIFIED_NOTE } from './not-verified.js';

/** What a spec file gets to register its tests. */
export interface SpecRegistrar {
  readonly context: SuiteContext;
  /**
   * Registers one test of a clause. `id` is the clause id ("B4") or a clause id with a
   * key ("C3:restart") that an adapter can name in a declared gap. The test's name
   * begins with the clause id and a colon, so `vitest -t "B4:"` selects the clause.
   */
  test(
    id: string,
    title: string,
    body: (env: TestEnvironment) => Promise<void>,
    options?: TestOptions,
  ): void;
}

export interface TestOptions {
  /** This test's own timeout (the model-based tests scale theirs with the run count). */
  timeoutMs?: number;
}

export type SpecDefinition = (suite: SpecRegistrar) => void;

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_MODEL_RUNS = 20;

/**
 * Registers the suite for `initializer`: one describe block whose collection runs the
 * initializer's setup and reads the adapter's declared capabilities (a declared gap
 * changes which tests are registered, so it must be known before tests exist).
 */
export function registerConformanceSuite(
  initializer: ConformanceInitializer,
  options: ConformanceOptions,
  areas: ReadonlyArray<readonly [AreaName, SpecDefinition]>,
): void {
  const selectedAreas = areas.filter(
    ([area]) => options.areas === undefined || options.areas.includes(area),
  );
  describe(`keepsake conformance: ${initializer.name}`, async () => {
    await initializer.setup?.();
    afterAll(async () => {
      await initializer.teardown?.();
    });
    const probeNamespace = uniqueNamespace('probe');
    const probe = await initializer.createAdapter(probeNamespace);
    const context: SuiteContext = {
      initializer,
      adapterName: probe.name,
      capabilities: probe.capabilities,
      readsQuarantined: typeof probe.readQuarantined === 'function',
      modelRuns: options.modelRuns ?? DEFAULT_MODEL_RUNS,
      testTimeoutMs: options.testTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      crashProbes: { written: 0, lost: 0 },
    };
    await probe.close();
    await (initializer.releaseAdapter ?? initializer.destroyAdapter)?.call(initializer, probe);
    await initializer.destroyNamespace?.(probeNamespace);
    const registeredGaps = new Set<string>();
    for (const [area, define] of selectedAreas) {
      const tests: PlannedTest[] = [];
      define(createRegistrar(context, options, registeredGaps, tests));
      // A clause filter can leave an area empty; vitest fails an empty describe block.
      if (tests.length === 0) continue;
      describe(area, () => {
        for (const test of tests) it(test.name, test.fn, test.timeout);
      });
    }
  });
}

interface PlannedTest {
  name: string;
  fn: (testContext: TestContext) => Promise<void> | void;
  timeout?: number;
}

function createRegistrar(
  context: SuiteContext,
  options: ConformanceOptions,
  registeredGaps: Set<string>,
  tests: PlannedTest[],
): SpecRegistrar {
  const timeout = options.testTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    context,
    test(id, title, body, testOptions = {}) {
      const clause = clauseOf(id);
      if (options.clauses !== undefined && !options.clauses.includes(clause)) return;
      const gap = context.capabilities.gaps.find(
        (candidate) => candidate.clause === clause || candidate.clause === id,
      );
      if (gap !== undefined) {
        // H1: a declared gap is reported as a test of its own, never silently skipped.
        const name = `${gap.clause}: ${DECLARED_GAP_MARKER} ${gap.reason}`;
        if (registeredGaps.has(name)) return;
        registeredGaps.add(name);
        tests.push({
          name,
          fn: () => {
            expect(gap.reason.trim(), `the gap declared for ${gap.clause} needs a reason`).not.toBe(
              '',
            );
          },
        });
        return;
      }
      tests.push({
        name: `${clause}: ${title}`,
        timeout: testOptions.timeoutMs ?? timeout,
        fn: async (testContext) => {
          const env = new TestEnvironment(context);
          let failed = false;
          try {
            await body(env);
            const crashed = await env.checkCrashProbes();
            if (env.crashNotSimulated) await reportNotVerified(testContext);
            else if (crashed && context.crashProbes.lost === 0) {
              await reportLosslessCrash(testContext, context.crashProbes.written);
            } else if (env.notVerifiedNote !== null) {
              markNotVerified(testContext.task.meta, env.notVerifiedNote);
              await testContext.annotate(env.notVerifiedNote, 'warning');
            }
          } catch (error) {
            failed = true;
            throw explainLikelyHookFault(env, error);
          } finally {
            if (!failed) await env.dispose();
            else {
              // A failing test may leave a lock held or a gate closed, so closing its
              // stores could hang; its own error matters more than the cleanup.
              await Promise.race([env.dispose().catch(() => undefined), realDelay(2000)]);
            }
          }
        },
      });
    },
  };
}

function clauseOf(id: string): ClauseId {
  const clause = id.split(':')[0] ?? '';
  if (!isClauseId(clause)) throw new TypeError(`Unknown clause id in test id "${id}"`);
  return clause;
}

/**
 * B3, C3, E2, G9, H1 (issue 24): a test that restarted after a "crash" the initializer
 * could not simulate passed without proving durability. It stays green (what it did check
 * held) but is marked, in the run (an annotation) and in the clause report (its meta).
 */
async function reportNotVerified(testContext: TestContext): Promise<void> {
  markNotVerified(testContext.task.meta);
  await testContext.annotate(
    `${NOT_VERIFIED_NOTE}: the initializer has no simulateCrash, so what survived the restart may never have reached stable storage`,
    'warning',
  );
}

/**
 * Issue 42: the test crashed, but no crash of the run so far lost the write made without
 * fsync just before it, so what survived proves nothing about durability either.
 */
async function reportLosslessCrash(testContext: TestContext, probes: number): Promise<void> {
  markNotVerified(testContext.task.meta, LOSSLESS_CRASH_NOTE);
  await testContext.annotate(
    `${LOSSLESS_CRASH_NOTE} (${probes} probe(s) in this run, each written with durable: false just before simulateCrash, all still there after it): see the README on writing a crash hook that drops what was not made durable`,
    'warning',
  );
}

/** The only real wait in the suite: a bound on cleanup after a test already failed. */
function realDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
