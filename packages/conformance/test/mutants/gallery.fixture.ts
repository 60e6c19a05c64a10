import { runConformance } from '../../src/index.js';
import { crashSimulatingMemory } from './crash-simulating-memory.js';
import { MUTANTS } from './mutants.js';

/**
 * Run by test/mutant-gallery.test.ts in a vitest child process: one conformance suite per
 * mutant, named `mutant:<name>`, over only the clauses it breaks. Every suite must fail.
 */
for (const mutant of MUTANTS) {
  const memory = crashSimulatingMemory(`mutant:${mutant.name}`, mutant.simulation);
  const { simulateCrash: _crash, ...withoutCrash } = memory.initializer;
  const base = mutant.crashSimulation ? memory.initializer : withoutCrash;
  runConformance(
    {
      ...base,
      ...(mutant.initializerModule === undefined
        ? {}
        : { initializerModule: mutant.initializerModule }),
      async createAdapter(namespace) {
        return mutant.wrap(await memory.initializer.createAdapter(namespace));
      },
    },
    { clauses: mutant.clauses, modelRuns: 5, testTimeoutMs: 5000 },
  );
}

// The same durability defect without a power loss: nothing can catch it, so the suite must
// not report its durability tests as passed but as "not verified (no crash simulation)".
const durableIgnored = MUTANTS.find((mutant) => mutant.name === 'durable-ignored')!;
const withoutPowerLoss = crashSimulatingMemory('unverified:durable-ignored');
const { simulateCrash: _noCrash, ...cannotCrash } = withoutPowerLoss.initializer;
runConformance(
  {
    ...cannotCrash,
    async createAdapter(namespace) {
      return durableIgnored.wrap(await withoutPowerLoss.initializer.createAdapter(namespace));
    },
  },
  { clauses: durableIgnored.clauses, testTimeoutMs: 5000 },
);

// Issue 42 item 5: the same defect with a crash hook that drops nothing. The suite cannot
// catch the defect, so every test that crashed must be reported "not verified: the crash
// simulation never lost a non-durable write", never passed.
const losslessCrash = crashSimulatingMemory('lossless-crash:durable-ignored', { lossless: true });
runConformance(
  {
    ...losslessCrash.initializer,
    async createAdapter(namespace) {
      return durableIgnored.wrap(await losslessCrash.initializer.createAdapter(namespace));
    },
  },
  { clauses: durableIgnored.clauses, testTimeoutMs: 5000 },
);
