#!/usr/bin/env node
/**
 * keepsake-conformance <initializer file> [options]
 *
 * Runs the whole Keepsake conformance suite against a third party's adapter: the file's
 * default export is a ConformanceInitializer. Uses vitest's node API, so no vitest config
 * is needed in the adapter's project.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startVitest } from 'vitest/node';

const USAGE = `Usage: keepsake-conformance <initializer file> [options]

  The file's default export is a ConformanceInitializer
  ({ name, createAdapter(namespace), setup?, teardown?, releaseAdapter?, destroyNamespace?,
  simulateCrash?, removeIndex?, injectBackendFault? }).

Options:
  --clauses <ids>       only these clauses, comma separated (e.g. B2,B4)
  --areas <names>       only these areas (identityAndInput, saves, flushAndShutdown, locks,
                        runsAndJournal, recovery, memoryLifecycle, capabilities, modelBased)
  -t, --test <pattern>  only tests whose name matches (e.g. "B4:")
  --timeout <ms>        timeout of one test (default 20000)
  --model-runs <n>      sequences the model-based test tries (default 20)
  --reporter <name>     vitest reporter (default, verbose, dot, json…); repeatable
  --output-file <path>  where a file reporter (json, junit) writes, from the current
                        directory
  -h, --help            show this help
`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    clauses: { type: 'string' },
    areas: { type: 'string' },
    test: { type: 'string', short: 't' },
    timeout: { type: 'string' },
    'model-runs': { type: 'string' },
    reporter: { type: 'string', multiple: true },
    'output-file': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

/** A reporter given as a path (`./my-reporter.js`) from the caller's directory; a name as is. */
function fromCallersDirectory(reporter: string): string {
  return /^\.{1,2}[\\/]/.test(reporter) ? resolve(reporter) : reporter;
}

if (values.help === true || positionals.length !== 1) {
  process.stdout.write(USAGE);
  process.exitCode = values.help === true ? 0 : 2;
} else {
  const initializerFile = resolve(positionals[0]!);
  if (!existsSync(initializerFile)) {
    process.stderr.write(`keepsake-conformance: no such file ${initializerFile}\n`);
    process.exitCode = 2;
  } else {
    const list = (value: string | undefined) =>
      value === undefined
        ? undefined
        : value
            .split(',')
            .map((item) => item.trim())
            .filter(Boolean);
    const options = {
      clauses: list(values.clauses),
      areas: list(values.areas),
      testTimeoutMs: values.timeout === undefined ? undefined : Number(values.timeout),
      modelRuns: values['model-runs'] === undefined ? undefined : Number(values['model-runs']),
    };
    process.env.KEEPSAKE_CONFORMANCE_INITIALIZER = initializerFile;
    process.env.KEEPSAKE_CONFORMANCE_OPTIONS = JSON.stringify(options);
    // dist/bin/ → the package root, where dist/runner/external-suite.js lives.
    const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const vitest = await startVitest([], {
      root: packageRoot,
      config: false,
      watch: false,
      run: true,
      include: ['dist/runner/external-suite.js'],
      exclude: [],
      // Inside node_modules the runner would be loaded by plain Node, whose import() runs a
      // .ts initializer but does not map its `./x.js` imports to `./x.ts` (issue 24).
      // Inlined, the runner and the initializer it imports go through vite's resolver.
      server: { deps: { inline: [/@keepsake[\\/]conformance/] } },
      testTimeout: options.testTimeoutMs ?? 20_000,
      hookTimeout: options.testTimeoutMs ?? 20_000,
      ...(values.test === undefined ? {} : { testNamePattern: values.test }),
      // vitest resolves these from its root (this package, inside node_modules): a path the
      // caller gave is resolved from the caller's working directory first (issue 42).
      ...(values.reporter === undefined
        ? {}
        : { reporters: values.reporter.map(fromCallersDirectory) }),
      ...(values['output-file'] === undefined
        ? {}
        : { outputFile: resolve(values['output-file']) }),
    });
    const failed = vitest.state.getCountOfFailedTests() > 0 || process.exitCode === 1;
    await vitest.close();
    process.exitCode = failed ? 1 : 0;
  }
}
