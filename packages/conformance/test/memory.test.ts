import { runConformance } from '../src/index.js';
import { crashSimulatingMemory } from './mutants/crash-simulating-memory.js';

// The in-memory reference adapter: adapters created with the same namespace share one
// backend, which is how the suite "restarts" onto the same data. Its power loss keeps only
// what was written durably (B3, C1, E2), so every durability test is verified on memory
// (none reported "not verified (no crash simulation)", issue 24).
runConformance(crashSimulatingMemory('memory').initializer);
