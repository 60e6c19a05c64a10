/**
 * Folder options/: what a store and its calls can be told. store-options.ts is the public
 * SessionStoreOptions, this file resolves them once (defaults, A3 limits, refused as
 * InvalidConfigError), and option-schemas.ts holds the strict schemas of every call's options
 * and inputs: an unknown key or a wrong type is refused, never ignored (B3).
 */

import { z } from 'zod';
import { REQUIRED_ADAPTER_PRIMITIVES, type StorageAdapter } from '../adapter/adapter.js';
import { InvalidConfigError } from '../errors/input-errors.js';
import { type Clock, systemClock } from '../time/clock.js';
import type { JournalDurabilityPolicy, SessionStoreOptions, StoreLimits } from './store-options.js';

const positiveInt = z.number().int().positive();
const nonNegative = z.number().nonnegative();

// Strict at every level: an unknown option is a typo whose intended setting would not apply.
const optionsSchema = z.strictObject({
  limits: z
    .object({
      maxDocumentBytes: positiveInt.optional(),
      maxMessages: positiveInt.optional(),
      maxJournalEventBytes: positiveInt.optional(),
    })
    .strict()
    .optional(),
  cache: z.object({ maxSessions: positiveInt.optional() }).strict().optional(),
  journal: z
    .object({ durability: z.enum(['terminal', 'group', 'each']).optional() })
    .strict()
    .optional(),
  checkpoint: z
    .object({ intervalMs: positiveInt.optional(), idleRefreshMs: positiveInt.optional() })
    .strict()
    .optional(),
  recovery: z
    .object({
      graceMs: nonNegative.optional(),
      maxAttempts: positiveInt.optional(),
      giveUpMs: positiveInt.optional(),
    })
    .strict()
    .optional(),
  lifecycle: z.object({ drainDeadlineMs: positiveInt.optional() }).strict().optional(),
  runs: z
    .object({
      cancelDeadlineMs: positiveInt.optional(),
      followPollMs: positiveInt.max(2_147_483_647).optional(),
      followPushedPollMs: positiveInt.max(2_147_483_647).optional(),
    })
    .strict()
    .optional(),
  deltas: z
    .object({ compactAfter: positiveInt.optional(), compactRatio: nonNegative.optional() })
    .strict()
    .optional(),
  flushConcurrency: positiveInt.optional(),
  readOnly: z.boolean().optional(),
});

export interface ResolvedOptions {
  adapter: StorageAdapter;
  clock: Clock;
  limits: StoreLimits;
  maxCachedSessions: number;
  journalDurability: JournalDurabilityPolicy;
  checkpointIntervalMs: number;
  idleRefreshMs: number;
  graceMs: number;
  maxAttempts: number;
  giveUpMs: number;
  drainDeadlineMs: number;
  cancelDeadlineMs: number;
  followPollMs: number;
  followPushedPollMs: number;
  compactAfter: number;
  compactRatio: number;
  flushConcurrency: number;
  readOnly: boolean;
}

/** Validates store options with zod; a bad value names the exact option to fix. */
export function resolveOptions(options: SessionStoreOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidConfigError('createSessionStore needs an options object with an `adapter`');
  }
  const { adapter, clock, ...rest } = options;
  if (
    typeof adapter !== 'object' ||
    adapter === null ||
    (adapter as { specificationVersion?: unknown }).specificationVersion !== 'v1'
  ) {
    throw new InvalidConfigError(
      'Option `adapter` must be a Keepsake storage adapter with specificationVersion "v1" (for example memoryAdapter() or fsAdapter({ directory }))',
    );
  }
  const missing = REQUIRED_ADAPTER_PRIMITIVES.filter(
    (primitive) => typeof (adapter as unknown as Record<string, unknown>)[primitive] !== 'function',
  );
  if (missing.length > 0) {
    throw new InvalidConfigError(
      `The ${String(adapter.name)} adapter does not implement ${missing.join(', ')} (required by StorageAdapterV1; an adapter written for an earlier @keepsake/core lacks the newer ones)`,
    );
  }
  if (clock !== undefined && !isClock(clock)) {
    throw new InvalidConfigError(
      'Option `clock` must be a Clock ({ now(), setTimer(), clearTimer() }), such as systemClock or a ManualClock',
    );
  }
  let parsed: ReturnType<typeof optionsSchema.safeParse>;
  try {
    parsed = optionsSchema.safeParse(rest);
  } catch (cause) {
    throw new InvalidConfigError('The store options could not be read (a getter threw)', { cause });
  }
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const parent = issue?.path.join('.') ?? '';
    if (issue?.code === 'unrecognized_keys') {
      const option = [parent, issue.keys[0]].filter((part) => part !== '').join('.');
      throw new InvalidConfigError(
        `Unknown store option \`${option}\`: check its spelling and where it is nested (see SessionStoreOptions)`,
        { cause: parsed.error },
      );
    }
    throw new InvalidConfigError(
      `Invalid store option \`${parent || '(root)'}\`: ${issue?.message}`,
      { cause: parsed.error },
    );
  }
  const value = parsed.data;
  return {
    adapter,
    clock: clock ?? systemClock,
    limits: {
      maxDocumentBytes: value.limits?.maxDocumentBytes ?? 16 * 1024 * 1024,
      maxMessages: value.limits?.maxMessages ?? 100_000,
      maxJournalEventBytes: value.limits?.maxJournalEventBytes ?? 1024 * 1024,
    },
    maxCachedSessions: value.cache?.maxSessions ?? 500,
    journalDurability: value.journal?.durability ?? 'group',
    checkpointIntervalMs: value.checkpoint?.intervalMs ?? 5_000,
    idleRefreshMs: value.checkpoint?.idleRefreshMs ?? 15_000,
    graceMs: value.recovery?.graceMs ?? 30_000,
    maxAttempts: value.recovery?.maxAttempts ?? 12,
    giveUpMs: value.recovery?.giveUpMs ?? 86_400_000,
    drainDeadlineMs: value.lifecycle?.drainDeadlineMs ?? 10_000,
    cancelDeadlineMs: value.runs?.cancelDeadlineMs ?? 10_000,
    followPollMs: value.runs?.followPollMs ?? 250,
    followPushedPollMs: value.runs?.followPushedPollMs ?? 1_000,
    compactAfter: value.deltas?.compactAfter ?? 64,
    compactRatio: value.deltas?.compactRatio ?? 1,
    flushConcurrency: value.flushConcurrency ?? 8,
    readOnly: value.readOnly ?? false,
  };
}

function isClock(value: unknown): value is Clock {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.now === 'function' &&
    typeof candidate.setTimer === 'function' &&
    typeof candidate.clearTimer === 'function'
  );
}
