import { ProblemsFoundError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { emptyCounts, otherCollectionsText } from '../migration/collection-counts.js';
import { countDocuments } from '../migration/list-all.js';
import {
  checkJsonDocuments,
  checkLifecycleStates,
  checkRetainedRevisions,
  checkSessions,
} from '../verify/check-documents.js';
import { checkIndex } from '../verify/check-index.js';
import { checkJournals } from '../verify/check-journals.js';
import { Findings } from '../verify/findings.js';

export interface VerifyOptions {
  json?: boolean;
}

/**
 * `keepsake verify <store>`: reads everything and changes nothing. Documents parse,
 * revisions are sane, journals are framed and gap-free (core's own journal reads report
 * what is wrong), the index agrees with the documents. Exits 9 when a problem is found;
 * warnings are reported and do not fail. Run it on a quiet store: a save in flight can make
 * the index disagree for a moment.
 */
export async function verifyCommand(
  context: CommandContext,
  url: string,
  options: VerifyOptions,
): Promise<void> {
  const spec = context.backend(url);
  const findings = new Findings();
  const checked = await context.withStore(spec, 'read', async (store) => {
    // Any call opens the store's adapter; the counts size the progress bar.
    await store.quarantined();
    const adapter = store.adapter;
    const counts = await countDocuments(adapter);
    const progress = context.progress();
    progress.start('verify sessions', counts.sessions);
    let read = 0;
    const sessions = await checkSessions(adapter, findings, () => progress.update(++read));
    await progress.stop();
    progress.start('verify journals', sessions.size);
    let journals = 0;
    let journalRecords = 0;
    let done = 0;
    for (const [id, facts] of sessions) {
      for (const health of await checkJournals(store, id, facts, findings)) {
        journals++;
        journalRecords += health.records;
      }
      progress.update(++done, `${journals} journals`);
    }
    await progress.stop();
    const revisions = await checkRetainedRevisions(adapter, sessions, findings);
    const lifecycle = await checkLifecycleStates(adapter, sessions, findings);
    const others = await checkJsonDocuments(adapter, findings);
    const indexEntries = await checkIndex(adapter, sessions, findings);
    const quarantined = (await adapter.listQuarantined()).length;
    return {
      sessions: counts.sessions,
      revisions,
      lifecycle,
      runs: others.runs,
      checkpoints: others.checkpoints,
      checkpointWrites: others['checkpoint-writes'],
      journals,
      journalRecords,
      indexEntries,
      quarantined,
    };
  });
  const problems = findings.count('problem');
  const warnings = findings.count('warning');
  if (options.json === true) {
    await context.printJson({
      store: spec.display,
      ok: problems === 0,
      checked,
      findings: findings.list,
    });
  } else {
    for (const finding of findings.list) {
      await context.print(`${finding.severity.padEnd(7)}  ${finding.item}: ${finding.message}`);
    }
    await context.print(
      `checked ${checked.sessions} sessions, ${checked.revisions} retained revisions, ` +
        `${checked.lifecycle} lifecycle states${otherCollectionsText({ ...emptyCounts(), runs: checked.runs, checkpoints: checked.checkpoints, 'checkpoint-writes': checked.checkpointWrites })}, ` +
        `${checked.journals} journals ` +
        `(${checked.journalRecords} records), ${checked.indexEntries} index entries; ` +
        `${checked.quarantined} quarantined documents`,
    );
    await context.print(
      problems === 0
        ? `ok: no problems${warnings === 0 ? '' : `, ${warnings} warning${warnings === 1 ? '' : 's'}`}`
        : `${problems} problem${problems === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`,
    );
  }
  if (problems > 0) throw new ProblemsFoundError(problems, `verify ${spec.display}`);
}
