import { resolve } from 'node:path';
import { ProblemsFoundError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { ExportReader } from '../export-file/export-reader.js';
import { ExportWriter } from '../export-file/export-writer.js';
import { BufferedOutput, ExportFile } from '../export-file/file-output.js';
import { otherCollectionsText } from '../migration/collection-counts.js';
import { compareBackends } from '../migration/compare-backends.js';
import { runMigration } from '../migration/run-migration.js';
import { reportMigration } from './migration-report.js';

export interface ExportOptions {
  output?: string;
  json?: boolean;
}

/**
 * `keepsake export <store> [-o file]`: the whole store as JSON Lines (see export-format.ts),
 * written by core's `migrateBackend` into an export file. With `-o`, the file is read back
 * and compared with the store at the end; on stdout it cannot be, and the report goes to
 * stderr so the export stays clean.
 */
export async function exportCommand(
  context: CommandContext,
  url: string,
  options: ExportOptions,
): Promise<void> {
  const spec = context.backend(url);
  const path = options.output === undefined ? null : resolve(context.io.cwd, options.output);
  await context.withAdapter(spec, 'read', async (source) => {
    const file = path === null ? null : await ExportFile.create(path);
    const output = new BufferedOutput(file ?? context.io.stdout);
    const writer = new ExportWriter(output, spec.display);
    try {
      await writer.open();
      const outcome = await runMigration({
        source,
        target: writer,
        targetName: path ?? 'stdout',
        mode: 'fresh',
        progress: context.progress(),
        compare: false,
      });
      await writer.finish(outcome.migration);
      await output.flush();
      await file?.complete();
      if (path !== null) {
        const reader = new ExportReader(path);
        try {
          await reader.open();
          outcome.comparison = await compareBackends(source, reader, context.progress());
        } finally {
          await reader.close();
        }
        await reportMigration(
          context,
          `exported ${spec.display} → ${path}`,
          outcome,
          options.json === true,
        );
      } else {
        const { documents, journalRecords, skippedCorrupt } = outcome.migration;
        await context.note(
          `exported ${documents.sessions} sessions, ${documents.revisions} retained revisions, ${documents.lifecycle} lifecycle states${otherCollectionsText(documents)}, ${journalRecords} journal records`,
        );
        for (const item of skippedCorrupt) {
          await context.note(`not exported: ${item} does not parse (see keepsake verify)`);
        }
        if (skippedCorrupt.length > 0) {
          throw new ProblemsFoundError(
            skippedCorrupt.length,
            `export ${spec.display}: not everything was exported`,
          );
        }
      }
    } catch (error) {
      await file?.abandon();
      throw error;
    }
  });
}
