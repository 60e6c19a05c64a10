import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import type { CliIo } from './cli-io.js';
import { CommandContext } from './command-context.js';
import { exportCommand } from './commands/export.js';
import { importCommand } from './commands/import.js';
import { lsCommand } from './commands/ls.js';
import { migrateCommand } from './commands/migrate.js';
import { quarantineLsCommand, quarantineRestoreCommand } from './commands/quarantine.js';
import { repairCommand } from './commands/repair.js';
import { showCommand } from './commands/show.js';
import { verifyCommand } from './commands/verify.js';
import { reportError } from './error-report.js';
import { EXIT_CODES } from './exit-codes.js';

const STORE_HELP =
  'fs:///absolute/path or a plain path, redis://[user:password@]host:port[/db][?prefix=…], s3://bucket/prefix?endpoint=… (credentials from the AWS environment)';

function version(): string {
  const manifest = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  return manifest.version;
}

/**
 * Runs one `keepsake` command line (without the node and script arguments) and returns its
 * exit code. Never calls `process.exit`: `bin.ts` sets the exit code, and tests call this
 * in-process.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version "fail" with exit 0; commander has printed its message already.
      return error.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
    }
    const report = reportError(error);
    await io.stderr.write(`keepsake: ${report.message}\n`);
    if (io.env.KEEPSAKE_DEBUG && error instanceof Error && error.stack) {
      await io.stderr.write(`${error.stack}\n`);
    }
    return report.exitCode;
  }
}

function buildProgram(io: CliIo): Command {
  let quiet = false;
  const context = () => new CommandContext(io, quiet);
  const program = new Command('keepsake')
    .description('Inspect, verify, repair, migrate, export and import Keepsake session stores.')
    .version(version())
    .option('-q, --quiet', 'no progress and no notes on stderr (results and errors only)')
    .hook('preAction', (command) => {
      quiet = command.opts<{ quiet?: boolean }>().quiet === true;
    })
    .showHelpAfterError('(keepsake --help lists the commands)')
    .addHelpText(
      'after',
      `\nStores (URLs):\n  ${STORE_HELP}\n\nExit codes: see the @keepsake/cli README.`,
    );
  configure(program, io);

  program
    .command('ls')
    .description('list sessions, newest first, one page at a time')
    .argument('<store>', 'the store (URL or path)')
    .option('-n, --limit <count>', 'sessions per page (1-1000)', '50')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--all', 'every page')
    .option('--rotated', 'include sessions whose id was rotated (D2)')
    .option('--json', 'JSON output: { sessions, nextCursor }')
    .action((store: string, options) => lsCommand(context(), store, options));

  program
    .command('show')
    .description('a session as stored: transcript, pending turn, journals')
    .argument('<store>', 'the store (URL or path)')
    .argument('<id>', 'the session id')
    .option('--json', 'JSON output')
    .action((store: string, id: string, options) => showCommand(context(), store, id, options));

  program
    .command('verify')
    .description('check documents, revisions, journals and the index; exit 9 on problems')
    .argument('<store>', 'the store (URL or path)')
    .option('--json', 'JSON output')
    .action((store: string, options) => verifyCommand(context(), store, options));

  program
    .command('repair')
    .description(
      'load every session as the store does: repair crashed turns, quarantine what does not parse, rebuild the index',
    )
    .argument('<store>', 'the store (URL or path)')
    .option(
      '--dry-run',
      'say what would be repaired; write nothing (exit 9 when there is something)',
    )
    .option(
      '--grace-ms <ms>',
      'a pending turn whose run showed no sign of life for this long is repaired (F1)',
      '30000',
    )
    .option('--json', 'JSON output')
    .action((store: string, options) => repairCommand(context(), store, options));

  program
    .command('migrate')
    .description('copy a whole store to another backend, then compare the two')
    .requiredOption('--from <store>', 'the store to copy')
    .requiredOption('--to <store>', 'the store to copy into (empty, unless --resume or --force)')
    .addOption(new Option('--resume', 'finish an interrupted migration into this target'))
    .addOption(
      new Option(
        '--force',
        'write into a target that holds data; differing documents are quarantined first',
      ),
    )
    .option('--json', 'JSON report')
    .action((options) => migrateCommand(context(), options));

  const quarantine = program
    .command('quarantine')
    .description('documents moved aside because they did not parse (A2)');
  configure(quarantine, io);
  quarantine
    .command('ls')
    .description('list quarantined documents')
    .argument('<store>', 'the store (URL or path)')
    .option('--json', 'JSON output')
    .action((store: string, options) => quarantineLsCommand(context(), store, options));
  quarantine
    .command('restore')
    .description('put a quarantined document back (it stays in quarantine too)')
    .argument('<store>', 'the store (URL or path)')
    .argument('<location>', 'its location, as quarantine ls prints it')
    .option('--as <id>', 'restore a session under another id')
    .option('--file <path>', 'restore this repaired copy of the document instead')
    .action((store: string, location: string, options) =>
      quarantineRestoreCommand(context(), store, location, options),
    );

  program
    .command('export')
    .description('the whole store as JSON Lines, on stdout or into a file')
    .argument('<store>', 'the store (URL or path)')
    .option(
      '-o, --output <file>',
      'write to this file (never overwritten) and compare it with the store',
    )
    .option('--json', 'JSON report (with --output)')
    .action((store: string, options) => exportCommand(context(), store, options));

  program
    .command('import')
    .description('an export file into a store, then compare the two')
    .argument('<file>', 'a file written by keepsake export')
    .requiredOption('--to <store>', 'the store to import into (empty, unless --resume or --force)')
    .option('--resume', 'finish an interrupted import into this target')
    .option(
      '--force',
      'write into a target that holds data; differing documents are quarantined first',
    )
    .option('--json', 'JSON report')
    .action((file: string, options) => importCommand(context(), file, options));

  for (const command of program.commands) configure(command, io);
  return program;
}

/** Every (sub)command: no process.exit, and output through the CLI's streams. */
function configure(command: Command, io: CliIo): void {
  command.exitOverride().configureOutput({
    writeOut: (text) => void io.stdout.write(text),
    writeErr: (text) => void io.stderr.write(text),
  });
}
