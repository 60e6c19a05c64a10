import { z } from 'zod';
import { InvalidInputError } from '../errors/input-errors.js';
import { findUnstorableValue, MAX_SESSION_DEPTH } from '../validation/json-value.js';
import { attachmentSchema } from '../validation/schemas.js';

/**
 * The options and inputs of store and run calls, as strict zod objects: an unknown key (a
 * typo such as `fsnyc`) or a value of the wrong type (`fsync: 'true'`) is refused naming
 * the option, never coerced or ignored. A save the caller believed durable must not quietly
 * be something else (B3).
 */
const flag = z.boolean().optional();
const sequence = z.number().int().nonnegative().optional();

/** B3, B5, B6, B7: store.save() and store.create(). */
export const saveOptionsSchema = z.strictObject({
  fsync: flag,
  skipIndex: flag,
  touchUpdatedAt: flag,
  allowShrink: flag,
});

const SAVE_FLAGS: ReadonlySet<string> = new Set(Object.keys(saveOptionsSchema.shape));

/**
 * `assertCallInput(saveOptionsSchema, …)`, with the options nearly every save passes (a plain
 * object of known flags, each a boolean or undefined) accepted without zod, which cost a
 * save more than the rest of its argument checks. Anything else goes to zod, for the same
 * typed error as before.
 */
export function assertSaveOptions(options: unknown, call: string): void {
  try {
    if (options === undefined || isFlagObject(options, SAVE_FLAGS)) return;
  } catch {
    // A getter or a Proxy trap threw: zod reads it again and reports it.
  }
  assertCallInput(saveOptionsSchema, options, call);
}

function isFlagObject(value: unknown, flags: ReadonlySet<string>): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key of Object.keys(value)) {
    if (!flags.has(key)) return false;
    const flagValue = (value as Record<string, unknown>)[key];
    if (flagValue !== undefined && typeof flagValue !== 'boolean') return false;
  }
  return true;
}

/** B5: store.load(). */
export const loadOptionsSchema = z.strictObject({ summaryOnly: flag, refresh: flag });

/** B7: store.list(). */
export const listOptionsSchema = z.strictObject({
  cursor: z.string().nullable().optional(),
  limit: z.number().int().min(1).max(1000).optional(),
  includeRotated: flag,
});

/** E2, E3: store.readJournal(). */
export const journalReadOptionsSchema = z.strictObject({
  afterSequence: sequence,
  upToSequence: sequence,
  limit: sequence,
});

/** H4: store.followRun(). A signal is checked by shape: realms differ (a test's jsdom). */
export const followRunOptionsSchema = z.strictObject({
  after: sequence,
  signal: z
    .custom<AbortSignal>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as AbortSignal).aborted === 'boolean' &&
        typeof (value as AbortSignal).addEventListener === 'function',
      'an AbortSignal',
    )
    .optional(),
  pollIntervalMs: z.number().int().positive().max(2_147_483_647).optional(),
});

/**
 * E1: store.beginRun(). The user message is checked where it is normalized and the run id
 * where ids are (A1: an InvalidIdError), so only their presence is left to this schema.
 */
export const beginRunInputSchema = z.strictObject({
  userMessage: z.unknown(),
  attachments: z.array(attachmentSchema).optional(),
  runId: z.unknown().optional(),
  /** B5: checked where ids are (A1). */
  replaceFrom: z.unknown().optional(),
});

/** E5: run.complete(); each message is checked where it is normalized. */
export const completeRunInputSchema = z.strictObject({
  assistantMessages: z.array(z.unknown()).optional(),
});

/** E6: run.fail() given a plain object (an Error is taken for its message and code). */
export const failureInputSchema = z.strictObject({
  message: z.string(),
  code: z.string().optional(),
});

/**
 * Throws InvalidInputError unless `value` is undefined (no options) or passes `schema`. The
 * message names the call and the option: `save(): option \`fsync\` must be boolean…`.
 */
export function assertCallInput(
  schema: z.ZodObject,
  value: unknown,
  call: string,
  what = 'option',
): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInputError(`${call}: the ${what}s must be an object`, { path: '' });
  }
  let result: ReturnType<typeof schema.safeParse>;
  try {
    result = schema.safeParse(value);
  } catch (cause) {
    // A getter or a Proxy trap of the caller's object threw while zod read it.
    throw new InvalidInputError(`${call}: the ${what}s could not be read`, { cause, path: '' });
  }
  if (result.success) return;
  const issue = result.error.issues[0];
  const known = Object.keys(schema.shape).join(', ');
  if (issue?.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    throw new InvalidInputError(
      `${call}: unknown ${what} \`${key}\` (the ${what}s are ${known}); nothing was done`,
      { cause: result.error, path: key },
    );
  }
  const path = issue?.path.join('.') ?? '';
  throw new InvalidInputError(
    `${call}: ${what} \`${path}\` is invalid (${issue?.message ?? 'invalid'}); nothing was done`,
    { cause: result.error, path },
  );
}

/** E1: beginRun's input; attachments are stored in the pending turn (session level 3). */
export function assertBeginRunInput(input: unknown): void {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidInputError('beginRun() needs { userMessage }', { path: '' });
  }
  const attachments = (input as { attachments?: unknown }).attachments;
  if (attachments !== undefined) {
    const unstorable = findUnstorableValue(attachments, {
      rootPath: 'attachments',
      rootDepth: 3,
      maxDepth: MAX_SESSION_DEPTH,
    });
    if (unstorable !== null) {
      throw new InvalidInputError(
        `beginRun(): \`${unstorable.path}\` ${unstorable.reason}; nothing was written`,
        { cause: unstorable.cause, path: unstorable.path },
      );
    }
  }
  assertCallInput(beginRunInputSchema, input, 'beginRun()', 'field');
}
