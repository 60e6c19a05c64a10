import { InvalidConfigError } from '@keepsake/core';
import { CLAUSE_IDS, isClauseId } from './clauses.js';
import { registerConformanceSuite, type SpecDefinition } from './harness/suite.js';
import { defineIdentityAndInput } from './spec/a-identity-input.js';
import { defineSaves } from './spec/b-saves.js';
import { defineBadInputProperties } from './spec/bad-input-properties.js';
import { defineFlushAndShutdown } from './spec/c-flush-shutdown.js';
import { defineLocks } from './spec/d-locks.js';
import { defineRunsAndJournal } from './spec/e-runs-journal.js';
import { defineRecovery } from './spec/f-recovery.js';
import { defineMemoryLifecycle } from './spec/g-memory-lifecycle.js';
import { defineCapabilities } from './spec/h-capabilities.js';
import { defineModelBased } from './spec/model-based.js';
import type { AreaName, ConformanceInitializer, ConformanceOptions } from './types.js';

export {
  CLAUSE_IDS,
  CLAUSES,
  type ClauseId,
  clauseOfTestName,
  DECLARED_GAP_MARKER,
} from './clauses.js';
export {
  type AdapterCall,
  type AdapterMethod,
  type Fault,
  RecordingFaultInjectingAdapter,
} from './harness/recording-fault-injecting-adapter.js';
export { seededRandom } from './harness/seeded-random.js';
export type {
  AreaName,
  BackendFaultKind,
  BackendFaultTarget,
  ConformanceInitializer,
  ConformanceOptions,
} from './types.js';

/** Every area, in contract order, with the spec file that registers its tests. */
const AREAS: ReadonlyArray<readonly [AreaName, SpecDefinition]> = [
  ['identityAndInput', defineIdentityAndInput],
  ['saves', defineSaves],
  ['flushAndShutdown', defineFlushAndShutdown],
  ['locks', defineLocks],
  ['runsAndJournal', defineRunsAndJournal],
  ['recovery', defineRecovery],
  ['memoryLifecycle', defineMemoryLifecycle],
  ['capabilities', defineCapabilities],
  ['modelBased', defineModelBased],
  ['badInput', defineBadInputProperties],
];

export const AREA_NAMES: readonly AreaName[] = AREAS.map(([name]) => name);

/**
 * Registers the whole conformance suite for an adapter: one vitest test or more per
 * clause, each named "<clause id>: …". Call it at the top level of a test file.
 */
export function runConformance(
  initializer: ConformanceInitializer,
  options: ConformanceOptions = {},
): void {
  validateOptions(options);
  registerConformanceSuite(initializer, options, AREAS);
}

function area(name: AreaName) {
  return (initializer: ConformanceInitializer, options: ConformanceOptions = {}): void => {
    validateOptions(options);
    registerConformanceSuite(
      initializer,
      { ...options, areas: [name] },
      AREAS.filter(([candidate]) => candidate === name),
    );
  };
}

/** A1–A5: ids, validation of what is read, limits, unknown and reserved fields. */
export const identityAndInput = area('identityAndInput');

/** B1–B8: atomic, durable, conditional saves; shrinks; the index; delete. */
export const saves = area('saves');

/** C1–C5: flushAll, close, restarts, the bounded cache, refusing work while closing. */
export const flushAndShutdown = area('flushAndShutdown');

/** D1–D4: per-session mutexes, lock identity across renames, no lock across slow I/O, fencing. */
export const locks = area('locks');

/** E1–E8: pending turns, the journal, checkpoints, completing, cancelling and failing runs, finding a run by id. */
export const runsAndJournal = area('runsAndJournal');

/** F1–F4: crash recovery, lazy journal retry, single flight, idempotence. */
export const recovery = area('recovery');

/** G1–G9: the memory lifecycle of batch-extraction memory providers. */
export const memoryLifecycle = area('memoryLifecycle');

/** H1–H3: declared capabilities and gaps, keys that work together, migration. */
export const capabilities = area('capabilities');

/**
 * Randomized, model-based: many sessions, streams, locks, renames, faults and restarts at
 * once, every result checked against a reference model (C3, C4, D2, E2, B2 and more).
 */
export const modelBased = area('modelBased');

/** A1–A4, B3–B5, B7, E1, E2, E5, E6, G6–G8 by property: generated bad input (to the store, its memory lifecycle and the codec helpers) is refused, typed, and changes nothing. */
export const badInput = area('badInput');

function validateOptions(options: ConformanceOptions): void {
  const unknownClauses = (options.clauses ?? []).filter((clause) => !isClauseId(clause));
  if (unknownClauses.length > 0) {
    throw new InvalidConfigError(
      `Option \`clauses\` names unknown clause ids ${unknownClauses.join(', ')}; known ids are ${CLAUSE_IDS.join(', ')}`,
    );
  }
  const unknownAreas = (options.areas ?? []).filter((name) => !AREA_NAMES.includes(name));
  if (unknownAreas.length > 0) {
    throw new InvalidConfigError(
      `Option \`areas\` names unknown areas ${unknownAreas.join(', ')}; known areas are ${AREA_NAMES.join(', ')}`,
    );
  }
}
