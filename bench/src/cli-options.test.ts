import { describe, expect, it } from 'vitest';
import { parseCliOptions, USAGE } from './cli-options.js';
import { sections } from './sections/registry.js';

describe('parseCliOptions', () => {
  it('runs everything in full mode into results/ by default', () => {
    const options = parseCliOptions([]);
    expect(options.mode).toBe('full');
    expect(options.only).toEqual([]);
    expect(options.outputDirectory).toMatch(/bench\/results$/);
    expect(options.scratchDirectory).toMatch(/bench\/\.tmp$/);
  });

  it('writes a quick run beside the committed report, not over it', () => {
    const options = parseCliOptions(['--quick']);
    expect(options.mode).toBe('quick');
    expect(options.outputDirectory).toMatch(/bench\/results\/quick$/);
  });

  it('writes a run of some sections beside the committed report, not over it', () => {
    const options = parseCliOptions(['--only', 'journal']);
    expect(options.mode).toBe('full');
    expect(options.only).toEqual(['journal']);
    expect(options.outputDirectory).toMatch(/bench\/results\/partial$/);
    expect(parseCliOptions(['--quick', '--only', 'journal']).outputDirectory).toMatch(
      /bench\/results\/quick$/,
    );
  });

  it('accepts the `--` that `pnpm run bench -- --quick` passes through', () => {
    expect(parseCliOptions(['--', '--quick']).mode).toBe('quick');
  });

  it('splits --only lists and repeats', () => {
    expect(parseCliOptions(['--only', 'journal,flush', '--only', 'memory']).only).toEqual([
      'journal',
      'flush',
      'memory',
    ]);
  });

  it('refuses an unknown option rather than ignoring it', () => {
    expect(() => parseCliOptions(['--quik'])).toThrow(/--quik/);
  });

  it('--help names the id of every registered section', () => {
    for (const section of sections) expect(USAGE, section.id).toContain(section.id);
  });
});
