import { resolve } from 'node:path';
import type { CommandContext } from '../command-context.js';
import { ExportReader } from '../export-file/export-reader.js';
import { runMigration } from '../migration/run-migration.js';
import { targetMode } from './migrate.js';
import { reportMigration } from './migration-report.js';

export interface ImportOptions {
  to: string;
  resume?: boolean;
  force?: boolean;
  json?: boolean;
}

/**
 * `keepsake import <file> --to URL`: an export file into a store, by core's
 * `migrateBackend` with the file as its source. The file is checked whole (every line, the
 * counts, the checksum) before anything is written, and the store is compared with it at the
 * end. Resumable like `migrate`.
 */
export async function importCommand(
  context: CommandContext,
  file: string,
  options: ImportOptions,
): Promise<void> {
  const path = resolve(context.io.cwd, file);
  const to = context.backend(options.to);
  const mode = targetMode(options);
  const reader = new ExportReader(path);
  try {
    await reader.open();
    await context.withAdapter(to, 'write', async (target) => {
      const outcome = await runMigration({
        source: reader,
        target,
        targetName: to.display,
        mode,
        progress: context.progress(),
        compare: true,
      });
      await reportMigration(
        context,
        `imported ${path} → ${to.display}`,
        outcome,
        options.json === true,
      );
    });
  } finally {
    await reader.close();
  }
}
