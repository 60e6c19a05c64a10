import { InvalidInputError } from '../errors/input-errors.js';
import {
  assertCallInput,
  completeRunInputSchema,
  failureInputSchema,
} from '../options/option-schemas.js';
import { normalizeMessage } from '../validation/session-validation.js';
import type { CompleteRunInput, JournalEventInput } from './run-types.js';

const EVENT_FIELDS: ReadonlySet<string> = new Set(['type', 'data', 'eventId']);

/**
 * E2: the shape of one appended event, checked by hand rather than by zod because it runs
 * once per streamed token: an object with only `type`, `data` and `eventId` (a stray key is
 * a mistake such as `{ type: 'token', text }`, whose text would be lost). The type, the event
 * id and the data are checked by the journal writer and by recordText (journal-record.ts).
 */
export function assertJournalEventShape(event: unknown): asserts event is JournalEventInput {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new InvalidInputError('append() takes an event object { type, data?, eventId? }', {
      path: '',
    });
  }
  for (const key in event) {
    if (!EVENT_FIELDS.has(key)) {
      throw new InvalidInputError(
        `append(): unknown event field \`${key}\` (the fields are type, data, eventId; put what the event carries in \`data\`). Nothing was written.`,
        { path: key },
      );
    }
  }
}

/**
 * E2: the event ids one run's caller gave, so a reused one is refused at `append` instead of
 * folding into two messages with one id. An id is taken by the first append that carries it
 * unless that append was refused as invalid (nothing was written): an append that failed
 * otherwise may still have been stored, so its id stays taken.
 */
export class RunEventIds {
  private readonly taken = new Set<string>();

  /** Takes `eventId` for an append about to start; throws if an earlier append took it. */
  take(runId: string, eventId: string | undefined): void {
    if (eventId === undefined || typeof eventId !== 'string') return;
    if (this.taken.has(eventId)) {
      throw new InvalidInputError(
        `append(): event id "${eventId}" was already used in run "${runId}"; event ids must be unique within a run (E2). Nothing was written.`,
        { path: 'eventId' },
      );
    }
    this.taken.add(eventId);
  }

  /** Gives back the id of an append refused before anything was written. */
  release(eventId: string | undefined): void {
    if (typeof eventId === 'string') this.taken.delete(eventId);
  }
}

/**
 * E5: complete()'s input, checked before the run stops its checkpoint, so a bad message
 * leaves the run as it was: every assistant message valid and no id given twice.
 */
export function assertCompleteInput(input: unknown, now: number): CompleteRunInput {
  assertCallInput(completeRunInputSchema, input, 'complete()', 'field');
  const value = (input ?? {}) as CompleteRunInput;
  const ids = new Set<string>();
  value.assistantMessages?.forEach((message, index) => {
    const where = `complete() assistantMessages[${index}]`;
    const normalized = normalizeMessage(message, now, where, `assistantMessages[${index}]`);
    if (message.id === undefined) return;
    if (ids.has(normalized.id)) {
      throw new InvalidInputError(
        `${where}: id "${normalized.id}" is given to more than one assistant message; message ids must be unique in a session (B5)`,
        { path: `assistantMessages[${index}].id` },
      );
    }
    ids.add(normalized.id);
  });
  return value;
}

/**
 * E6: fail()'s error: a plain `{ message, code? }`, or an Error, taken for its message and a
 * string `code` (a Node system error carries more enumerable fields than that).
 */
export function failureOf(error: unknown): { message: string; code?: string } | undefined {
  if (error === undefined) return undefined;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? { message: error.message, code } : { message: error.message };
  }
  assertCallInput(failureInputSchema, error, 'fail()', 'field');
  return error as { message: string; code?: string };
}
