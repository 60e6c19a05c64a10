import type { Target } from '../../harness/compare.js';
import { langgraphSaverSection, SQLITE_SAVER } from './langgraph-saver.js';

/**
 * The LangGraph saver's targets (issue 38), each against SqliteSaver measured in the same
 * rounds: durable steps on one thread ≥ 1.0× (`synchronous = FULL`), on 16 threads at once
 * ≥ 3×, without fsync ≥ 1.0× (`NORMAL`); `getTuple` of the latest checkpoint and a full
 * `list` of a 1,000-checkpoint thread in at most 1.5× SqliteSaver's time. Listed in
 * `src/targets.ts` beside the other sections' targets.
 */
export const langgraphTargets: readonly Target[] = [
  {
    id: 'langgraph-durable-vs-sqlite',
    description: 'LangGraph: durable steps, one thread ≥ 1.0× SqliteSaver (synchronous = FULL)',
    section: langgraphSaverSection.id,
    table: 'steps',
    cases: ['durable'],
    reference: { contender: SQLITE_SAVER },
    comparator: '>=',
    threshold: 1.0,
  },
  {
    id: 'langgraph-durable-16-vs-sqlite',
    description: 'LangGraph: durable steps, 16 threads at once ≥ 3× SqliteSaver (FULL)',
    section: langgraphSaverSection.id,
    table: 'steps',
    cases: ['durable-16'],
    reference: { contender: SQLITE_SAVER },
    comparator: '>=',
    threshold: 3,
  },
  {
    id: 'langgraph-lazy-vs-sqlite',
    description: 'LangGraph: steps without fsync ≥ 1.0× SqliteSaver (synchronous = NORMAL)',
    section: langgraphSaverSection.id,
    table: 'steps',
    cases: ['lazy'],
    reference: { contender: SQLITE_SAVER },
    comparator: '>=',
    threshold: 1.0,
  },
  {
    id: 'langgraph-reads-vs-sqlite',
    description:
      'LangGraph: getTuple (latest) and list of a 1,000-checkpoint thread ≤ 1.5× SqliteSaver time',
    section: langgraphSaverSection.id,
    table: 'reads',
    cases: ['get-latest', 'list-all'],
    reference: { contender: SQLITE_SAVER },
    comparator: '<=',
    threshold: 1.5,
  },
];
