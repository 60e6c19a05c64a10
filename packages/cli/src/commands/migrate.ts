import { UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import type { TargetMode } from '../migration/resumable-target.js';
import { runMigration } from '../migration/run-migration.js';
import { reportMigration } from './migration-report.js';

export interface MigrateOptions {
  from: string;
  to: string;
  resume?: boolean;
  force?: boolean;
  json?: boolean;
}

/**
 * `keepsake migrate --from URL --to URL`: copies sessions, retained revisions, journals and
 * lifecycle state with core's `migrateBackend` (H3), then reads both stores back and
 * compares them. Stop the writers of the source first: the copy is not a snapshot.
 */
export async function migrateCommand(
  context: CommandContext,
  options: MigrateOptions,
): Promise<void> {
  const from = context.backend(options.from);
  const to = context.backend(options.to);
  if (JSON.stringify(from) === JSON.stringify(to)) {
    throw new UsageError('--from and --to name the same store');
  }
  const mode = targetMode(options);
  await context.withAdapter(from, 'read', (source) =>
    context.withAdapter(to, 'write', async (target) => {
      const outcome = await runMigration({
        source,
        target,
        targetName: to.display,
        mode,
        progress: context.progress(),
        compare: true,
      });
      await reportMigration(
        context,
        `migrated ${from.display} → ${to.display}`,
        outcome,
        options.json === true,
      );
    }),
  );
}

export function targetMode(options: { resume?: boolean; force?: boolean }): TargetMode {
  if (options.resume === true && options.force === true) {
    throw new UsageError('--resume and --force do not go together: --force already resumes');
  }
  return options.force === true ? 'force' : options.resume === true ? 'resume' : 'fresh';
}
