import { memoryAdapter, type StorageAdapter } from '@keepsake/core';
import { expect, it, type RunnerTestFile } from 'vitest';
import { runConformance } from '../src/index.js';

/** The memory adapter, declaring two gaps it does not have, to test how gaps are registered. */
function gappedAdapter(namespace: string): StorageAdapter {
  const adapter = memoryAdapter({ namespace });
  const capabilities = {
    ...adapter.capabilities,
    gaps: [
      { clause: 'B3', reason: 'this medium cannot confirm fsync' },
      {
        clause: 'C3:model',
        reason: 'the model-based test needs more time than this backend allows',
      },
    ],
  };
  return new Proxy(adapter, {
    get: (target, property) =>
      property === 'capabilities' ? capabilities : Reflect.get(target, property, target),
  });
}

runConformance(
  {
    name: 'memory with declared gaps',
    createAdapter: async (namespace) => gappedAdapter(namespace),
  },
  { clauses: ['B3', 'C3'] },
);

function testNames(file: RunnerTestFile): string[] {
  const names: string[] = [];
  const visit = (tasks: RunnerTestFile['tasks']) => {
    for (const task of tasks) {
      if (task.type === 'suite') visit(task.tasks);
      else names.push(task.name);
    }
  };
  visit(file.tasks);
  return names;
}

it('a declared gap replaces its clause by one test that names the reason; filters keep only chosen clauses', ({
  task,
}) => {
  const names = testNames(task.file).filter((name) => /^[A-H][0-9]+:/.test(name));
  const b3 = names.filter((name) => name.startsWith('B3:'));
  expect(b3).toEqual(['B3: declared gap — this medium cannot confirm fsync']);
  expect(names).toContain(
    'C3:model: declared gap — the model-based test needs more time than this backend allows',
  );
  // The other C3 tests still run.
  expect(names.filter((name) => name.startsWith('C3: ')).length).toBeGreaterThan(1);
  expect(names.every((name) => name.startsWith('B3:') || name.startsWith('C3'))).toBe(true);
});
