import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export interface CliOptions {
  readonly mode: 'quick' | 'full';
  /** Section ids (or parts of them) to run; all when empty. */
  readonly only: readonly string[];
  /** Where latest.md, latest.json and the charts go. */
  readonly outputDirectory: string;
  /** Parent of the scratch directory; must be on the filesystem being measured. */
  readonly scratchDirectory: string;
  readonly help: boolean;
}

export const USAGE = `Usage: pnpm bench [--quick] [--only <section>[,<section>…]] [--out <dir>] [--scratch <dir>]

  --quick            smaller workloads and 3 rounds: a smoke check that finishes in minutes
  --only <ids>       run only the sections whose id contains one of these words
                     (fs-durable-save, fs-journal-append, fs-paced-streams, fs-flush-all,
                     fs-recovery, fs-memory, redis-durable, s3-durable, server,
                     langgraph-saver, openai-agents-session, server-followers,
                     takeover)
  --out <dir>        where the report goes (default: bench/results for a full run of every
                     section, bench/results/quick with --quick, else bench/results/partial)
  --scratch <dir>    where files are written while measuring (default: bench/.tmp); keep it
                     on the disk you want measured, never on a tmpfs
`;

const packageDirectory = fileURLToPath(new URL('..', import.meta.url));

export function parseCliOptions(argv: readonly string[]): CliOptions {
  const { values } = parseArgs({
    // `pnpm run bench -- --quick` passes the `--` through; there are no positionals to protect.
    args: argv.filter((argument) => argument !== '--'),
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true, default: [] },
      out: { type: 'string' },
      scratch: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const mode = values.quick ? 'quick' : 'full';
  const only = values.only.flatMap((entry) => entry.split(',')).filter((entry) => entry !== '');
  // Only a full run of every section replaces the committed report; a quick or partial one
  // goes beside it.
  const beside = mode === 'quick' ? '/quick' : only.length > 0 ? '/partial' : '';
  return {
    mode,
    only,
    outputDirectory: values.out ?? `${packageDirectory}results${beside}`,
    scratchDirectory: values.scratch ?? `${packageDirectory}.tmp`,
    help: values.help,
  };
}
