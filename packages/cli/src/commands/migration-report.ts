import { ProblemsFoundError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { otherCollectionsText, totalDocuments } from '../migration/collection-counts.js';
import type { MigrationOutcome } from '../migration/run-migration.js';

/**
 * Prints what a migration (migrate, import, export) did and what the comparison found, and
 * fails with exit 9 when the target does not hold everything the source does.
 */
export async function reportMigration(
  context: CommandContext,
  what: string,
  outcome: MigrationOutcome,
  json: boolean,
): Promise<void> {
  const { migration, comparison } = outcome;
  const mismatches = comparison?.mismatches ?? [];
  if (json) {
    await context.printJson({
      ok: mismatches.length === 0 && migration.skippedCorrupt.length === 0,
      ...outcome,
    });
  } else {
    const { documents } = migration;
    await context.print(
      `${what}: ${documents.sessions} sessions, ${documents.revisions} retained revisions, ` +
        `${documents.lifecycle} lifecycle states${otherCollectionsText(documents)}, ` +
        `${migration.journals} journals ` +
        `(${migration.journalRecords} records)` +
        (outcome.alreadyThere > 0
          ? `; ${outcome.alreadyThere} documents were already in place from an earlier run`
          : ''),
    );
    for (const item of migration.skippedCorrupt) {
      await context.print(
        `not copied: ${item} does not parse (keepsake verify lists it; keepsake repair moves it to quarantine, or repair it by hand, then migrate again with --resume)`,
      );
    }
    if (outcome.sourceQuarantined > 0) {
      await context.note(
        `note: the source's quarantine holds ${outcome.sourceQuarantined} document(s); a migration does not carry them (keepsake quarantine ls)`,
      );
    }
    for (const { item, location } of outcome.replaced) {
      await context.print(`replaced: ${item}; the target's version was moved to ${location}`);
    }
    if (comparison !== null) {
      const counts = comparison.documents;
      await context.print(
        `compared: ${totalDocuments(counts)} documents and ` +
          `${comparison.journalRecords} journal records equal in both stores` +
          (comparison.normalized.length > 0
            ? ` (${comparison.normalized.length} with fields the copy filled with its own read time, A5)`
            : ''),
      );
      await context.print(`source checksum ${comparison.sourceChecksum}`);
      await context.print(`target checksum ${comparison.targetChecksum}`);
      for (const mismatch of mismatches.slice(0, 50)) {
        await context.print(`mismatch: ${mismatch.item}: ${mismatch.problem}`);
      }
      if (mismatches.length > 50) await context.print(`… and ${mismatches.length - 50} more`);
    }
  }
  // A document that does not parse is left behind by design (core never copies one), but the
  // target then lacks it: the operator has to hear it in the exit code, not only read it.
  const problems = mismatches.length + migration.skippedCorrupt.length;
  if (problems > 0) throw new ProblemsFoundError(problems, `${what}: not everything was copied`);
}
