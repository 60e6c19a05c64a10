import {
  type Collection,
  CorruptDocumentError,
  createSessionStore,
  decodeStoredSession,
  lifecycleStateSchema,
  NotFoundError,
  type SessionStore,
  type SessionSummary,
  type StorageAdapter,
  type StoredDocument,
  type StoreEvent,
  sessionSummarySchema,
} from '@keepsake/core';
import type { BackendSpec } from '../backend-url.js';
import { CliError, UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { listAll } from '../migration/list-all.js';
import { createBackend } from '../open-backend.js';
import { sessionSummary } from '../session-summary.js';

export interface RepairOptions {
  dryRun?: boolean;
  json?: boolean;
  graceMs: string;
}

/** One thing `repair` did (or, with --dry-run, would do). */
export interface RepairAction {
  /** `replay`, `recover`, `update`, `quarantine`, `index`. */
  kind: 'replay' | 'recover' | 'update' | 'quarantine' | 'index';
  /** `sessions/<id>`, `revisions/<id>`, `index`, `journals`… */
  item: string;
  detail: string;
}

/** Index fields compared with what the documents give (B7). */
const INDEX_FIELDS = [
  'title',
  'createdAt',
  'updatedAt',
  'messageCount',
  'pending',
  'parentId',
  'rotatedTo',
] as const satisfies ReadonlyArray<keyof SessionSummary>;

/** The collections whose documents core and the checkpoint saver write as JSON text. */
const JSON_COLLECTIONS = ['runs', 'checkpoints', 'checkpoint-writes'] as const;

/**
 * `keepsake repair <store>`: loads every session as the store does, so a crashed run's turn is
 * repaired (F1; a run within its grace is left alone: it may be alive), a marker brought up to
 * date (F2), and a document that does not parse moved to quarantine (A2), bytes intact; does
 * the same quarantine for every other collection's documents that do not parse; rebuilds the
 * index when it is missing, unreadable or disagrees with the documents (B7); on fs, the open
 * replays the group-commit logs of dead processes into their journals (E2). With --dry-run
 * the store is opened read-only and runs the same repairs in memory (`readOnly: true`), so
 * what is printed is what would be written, and nothing is.
 */
export async function repairCommand(
  context: CommandContext,
  url: string,
  options: RepairOptions,
): Promise<void> {
  const graceMs = Number(options.graceMs);
  if (!Number.isInteger(graceMs) || graceMs < 0) {
    throw new UsageError('--grace-ms must be a whole number of milliseconds, 0 or more');
  }
  const dryRun = options.dryRun === true;
  const spec = context.backend(url);
  const actions: RepairAction[] = [];
  const leftAlone: RepairAction[] = [];
  // fs: what a writing open replays, found by a read-only open (which replays nothing).
  if (spec.scheme === 'fs') actions.push(...(await pendingReplays(context, spec)));
  const store = createSessionStore({
    adapter: await createBackend(spec, dryRun ? 'read' : 'repair'),
    readOnly: dryRun,
    recovery: { graceMs },
  });
  const recovered = new Map<string, string>();
  store.on((event: StoreEvent) => {
    if (event.type === 'recovery') {
      recovered.set(event.sessionId, `run ${event.runId ?? '?'}: ${event.outcome}`);
    }
  });
  let sessions = 0;
  try {
    // Opens the store's adapter (and the replay of an fs open, which comes first).
    await store.quarantined();
    const adapter = store.adapter;
    const ids: string[] = [];
    for await (const id of listAll(adapter, 'sessions')) ids.push(id);
    const progress = context.progress();
    progress.start('repair sessions', ids.length);
    const summaries = new Map<string, SessionSummary>();
    for (const id of ids) {
      const outcome = await repairSession(store, id, recovered);
      if (outcome.summary !== null) summaries.set(id, outcome.summary);
      if (outcome.action !== null) actions.push(outcome.action);
      if (outcome.leftAlone !== null) leftAlone.push(outcome.leftAlone);
      sessions++;
      progress.update(sessions, `${actions.length} repairs`);
    }
    await progress.stop();
    actions.push(...(await quarantineOthers(adapter)));
    const index = await indexRepair(adapter, summaries);
    if (index !== null) {
      await adapter.replaceIndex([...summaries.values()], { durable: true });
      actions.push(index);
    }
    // What the repairs wrote without a flush of its own (a crashed turn's repair, its crash
    // record: F1, C3) is made durable here (C1).
    await adapter.sync();
  } finally {
    // Not store.close(): it re-persists every session it holds with fsync (C1), which would
    // rewrite each sound session this repair only read. Nothing here is left unsaved (no
    // run, no edit, no memory agent): every repair was written when its load returned.
    await store.adapter.close().catch(() => undefined);
  }
  await report(context, spec.display, { dryRun, sessions, actions, leftAlone }, options.json);
  if (dryRun && actions.length > 0) {
    throw new CliError(
      'problemsFound',
      `repair --dry-run ${spec.display}: ${actions.length} repair${actions.length === 1 ? '' : 's'} to make; nothing was written (run it without --dry-run to make them)`,
    );
  }
}

async function pendingReplays(context: CommandContext, spec: BackendSpec): Promise<RepairAction[]> {
  const { readOnlyFsReport } = await import('@keepsake/fs');
  return context.withAdapter(spec, 'read', async (adapter) => {
    const found = readOnlyFsReport(adapter);
    if (found === null || found.deadLogs === 0) return [];
    const journals = found.journalsInDeadLogs.length;
    return [
      {
        kind: 'replay',
        item: 'journals',
        detail: `${found.deadLogs} group-commit log(s) of dead processes replayed into their journals (appends of ${journals} journal${journals === 1 ? '' : 's'}, E2), then removed`,
      },
    ];
  });
}

interface SessionOutcome {
  summary: SessionSummary | null;
  action: RepairAction | null;
  leftAlone: RepairAction | null;
}

/** Loads one session as the store does: repaired (F1, F2) or quarantined (A2). */
async function repairSession(
  store: SessionStore,
  id: string,
  recovered: Map<string, string>,
): Promise<SessionOutcome> {
  const item = `sessions/${id}`;
  const before = await store.adapter.getDocument('sessions', id);
  if (before === null) return { summary: null, action: null, leftAlone: null };
  try {
    const session = await store.load(id);
    const repaired = recovered.get(id);
    const action: RepairAction | null =
      repaired !== undefined
        ? {
            kind: 'recover',
            item,
            detail: `crashed turn repaired from its journal (${repaired}, F1)`,
          }
        : session.revision !== before.revision
          ? { kind: 'update', item, detail: 'markers watching a journal brought up to date (F2)' }
          : null;
    const leftAlone: RepairAction | null =
      session.pending === null
        ? null
        : {
            kind: 'recover',
            item,
            detail: `run ${session.pending.streamId} may still be alive (a sign of life within --grace-ms, or its owner is running): left pending`,
          };
    return { summary: sessionSummary(session), action, leftAlone };
  } catch (error) {
    if (NotFoundError.isInstance(error)) return { summary: null, action: null, leftAlone: null };
    if (!CorruptDocumentError.isInstance(error)) throw error;
    const reason = error.cause instanceof Error ? error.cause.message : 'it does not parse';
    return {
      summary: null,
      action: {
        kind: 'quarantine',
        item,
        detail: `does not parse (${reason}): moved to quarantine (A2)`,
      },
      leftAlone: null,
    };
  }
}

/**
 * A2 for the other collections: a retained revision, lifecycle state, run record, checkpoint
 * or checkpoint write that does not parse is moved to quarantine, bytes intact, as core or
 * the checkpoint saver does when it reads one.
 */
async function quarantineOthers(adapter: StorageAdapter): Promise<RepairAction[]> {
  const actions: RepairAction[] = [];
  const check = async (
    collection: Collection,
    why: (id: string, stored: StoredDocument) => string | null,
  ) => {
    const ids: string[] = [];
    for await (const id of listAll(adapter, collection)) ids.push(id);
    for (const id of ids) {
      const stored = await adapter.getDocument(collection, id);
      if (stored === null) continue;
      const reason = why(id, stored);
      if (reason === null) continue;
      await adapter.quarantineDocument(collection, id, `keepsake repair: ${reason}`);
      actions.push({
        kind: 'quarantine',
        item: `${collection}/${id}`,
        detail: `does not parse (${reason}): moved to quarantine (A2)`,
      });
    }
  };
  await check('revisions', (id, stored) => {
    const decoded = decodeStoredSession(
      id.slice(0, id.lastIndexOf('.')),
      { ...stored, revision: 0 },
      Date.now(),
    );
    return decoded.ok ? null : decoded.reason;
  });
  await check('lifecycle', (id, stored) => {
    const parsed = lifecycleStateSchema.safeParse(parseJson(stored.base));
    if (!parsed.success) return 'not the lifecycle state of a session';
    return parsed.data.sessionId === id ? null : `the state of session "${parsed.data.sessionId}"`;
  });
  for (const collection of JSON_COLLECTIONS) {
    await check(collection, (_id, stored) =>
      parseJson(stored.base) === undefined ? 'not JSON' : null,
    );
  }
  return actions;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * B7: what is wrong with the index, as stored, against the summaries of the readable
 * sessions just loaded (null: nothing, it lists each once with its document's summary).
 */
async function indexRepair(
  adapter: StorageAdapter,
  summaries: ReadonlyMap<string, SessionSummary>,
): Promise<RepairAction | null> {
  const entries = new Map<string, SessionSummary>();
  let problems = 0;
  let cursor: string | null = null;
  do {
    const page = await adapter.listIndex({ cursor, limit: 1000 });
    if (page.status !== 'ok') {
      const why =
        page.status === 'missing' ? 'there is none' : `it cannot be read (${page.reason})`;
      return {
        kind: 'index',
        item: 'index',
        detail: `rebuilt from ${summaries.size} readable sessions: ${why} (B7)`,
      };
    }
    for (const raw of page.entries) {
      const parsed = sessionSummarySchema.safeParse(raw);
      if (!parsed.success || entries.has(parsed.data.id)) problems++;
      else entries.set(parsed.data.id, parsed.data);
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  for (const [id, entry] of entries) {
    const summary = summaries.get(id);
    if (summary === undefined || INDEX_FIELDS.some((field) => entry[field] !== summary[field])) {
      problems++;
    }
  }
  for (const id of summaries.keys()) if (!entries.has(id)) problems++;
  if (problems === 0) return null;
  return {
    kind: 'index',
    item: 'index',
    detail: `rebuilt from ${summaries.size} readable sessions: ${problems} entr${problems === 1 ? 'y' : 'ies'} missing, extra or disagreeing with the documents (B7)`,
  };
}

interface RepairReport {
  dryRun: boolean;
  sessions: number;
  actions: RepairAction[];
  leftAlone: RepairAction[];
}

async function report(
  context: CommandContext,
  store: string,
  result: RepairReport,
  json: boolean | undefined,
): Promise<void> {
  if (json === true) {
    await context.printJson({ store, ...result });
    return;
  }
  const verb = result.dryRun ? 'would ' : '';
  for (const action of result.actions) {
    await context.print(`${verb}${action.kind.padEnd(10)}  ${action.item}: ${action.detail}`);
  }
  for (const left of result.leftAlone) {
    await context.print(`left alone  ${left.item}: ${left.detail}`);
  }
  const count = (kind: RepairAction['kind']) =>
    result.actions.filter((action) => action.kind === kind).length;
  const done = (what: string) => (result.dryRun ? `to be ${what}` : what);
  const parts = [
    `${count('recover')} crashed turn(s) ${done('repaired')}`,
    `${count('update')} session(s) ${done('updated')}`,
    `${count('quarantine')} document(s) ${done('quarantined')}`,
    count('index') > 0 ? `index ${done('rebuilt')}` : 'index sound',
  ];
  if (count('replay') > 0) parts.unshift(`group-commit logs ${done('replayed')}`);
  const summary = `${result.sessions} sessions read; ${parts.join(', ')}`;
  const command = result.dryRun ? `repair --dry-run ${store}` : `repair ${store}`;
  if (result.actions.length === 0) {
    await context.print(`${command}: nothing to repair (${summary})`);
  } else {
    await context.print(`${command}: ${summary}`);
  }
  if (result.dryRun) await context.print('dry run: nothing was written');
}
