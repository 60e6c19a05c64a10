import { memoryAdapter, type StorageAdapter } from '@keepsake/core';
import { expect, it, type RunnerTestFile } from 'vitest';
import { runConformance } from '../src/index.js';

/** The memory adapter without its optional readQuarantined primitive. */
function adapterWithoutReadQuarantined(namespace: string): StorageAdapter {
  const adapter = memoryAdapter({ namespace });
  return new Proxy(adapter, {
    get: (target, property) =>
      property === 'readQuarantined' ? undefined : Reflect.get(target, property, target),
  });
}

runConformance(
  {
    name: 'memory without readQuarantined',
    createAdapter: async (namespace) => adapterWithoutReadQuarantined(namespace),
  },
  { clauses: ['A2'] },
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

it('an adapter without readQuarantined gets a test that says so instead of the byte check', ({
  task,
}) => {
  const names = testNames(task.file).filter((name) => name.startsWith('A2:'));
  expect(names).toContain(
    "A2: quarantined bytes — adapter offers no readQuarantined; checked by the adapter's own tests",
  );
  expect(names.filter((name) => name.includes('adapter implements readQuarantined'))).toEqual([]);
  // The other A2 tests still run.
  expect(names.length).toBeGreaterThan(5);
});
