/**
 * Folder sessions/documents/: a session's stored form. This file encodes a document (full or
 * delta) and decodes one back, reserved fields (A4), a decode that does not parse (A2) or a bad
 * side field (A5); head-text.ts is the head text a delta carries, codec-helpers.ts the codec as
 * exported to tools.
 */

import type { StoredDocument } from '../../adapter/adapter.js';
import { SummaryOnlyError } from '../../errors/input-errors.js';
import { findUnstorableValue, MAX_SESSION_DEPTH } from '../../validation/json-value.js';
import {
  attachmentSchema,
  contentSchema,
  idSchema,
  journalTagSchema,
  type Message,
  markerSchema,
  messageRoleSchema,
  pendingTurnSchema,
  type Session,
  type SessionSummary,
  timestampSchema,
  toolCallSchema,
} from '../../validation/schemas.js';

/** Prefix of the fields that belong to the store (A4). */
export const RESERVED_PREFIX = '_keepsake';
const FORMAT_FIELD = '_keepsakeFormat';
const DELTA_FIELD = '_keepsakeDelta';
const FORMAT_VERSION = 1;

/** The part of a session written with every save: everything except the messages. */
export type SessionHead = Omit<Session, 'messages'>;

export interface DecodeProblem {
  field: string;
  message: string;
}

export type DecodeResult =
  | { ok: true; session: Session; problems: DecodeProblem[]; byteSize: number }
  | { ok: false; reason: string };

export function encodeFull(session: Session): string {
  assertNotSummaryView(session);
  return JSON.stringify({ [FORMAT_FIELD]: FORMAT_VERSION, ...session });
}

/**
 * A delta document. `headText`, when the caller has it, is `JSON.stringify(head)` (the save
 * keeps it to tell a changed head later): it is spliced in, and the text is the same as if
 * the whole delta were stringified at once.
 */
export function encodeDelta(
  head: SessionHead,
  baseCount: number,
  appended: Message[],
  headText: string = JSON.stringify(head),
): string {
  assertNotSummaryView(head);
  if (!Number.isSafeInteger(baseCount)) throw new RangeError(`baseCount ${baseCount}`);
  return `{"${DELTA_FIELD}":${FORMAT_VERSION},"baseCount":${baseCount},"head":${headText},"appended":${JSON.stringify(appended)}}`;
}

export function headOf(session: Session): SessionHead {
  const { messages: _messages, ...head } = session;
  return head;
}

/**
 * Folds base + deltas and validates the result (A2, A5). Only a document whose
 * transcript cannot be read (unparseable JSON, a delta that does not fit its base, a
 * message without id, role or content) fails; any other invalid field is reset and
 * reported as a problem.
 */
export function decodeSession(
  expectedId: string,
  stored: StoredDocument,
  now: number,
): DecodeResult {
  let raw: Record<string, unknown>;
  let byteSize = stored.base.length;
  try {
    raw = asObject(JSON.parse(stored.base), 'document');
    for (const deltaText of stored.deltas) {
      byteSize += deltaText.length;
      const delta = asObject(JSON.parse(deltaText), 'delta');
      const messages = raw.messages;
      if (!Array.isArray(messages)) throw new Error('base has no message list');
      if (delta.baseCount !== messages.length) {
        throw new Error(
          `delta expects ${String(delta.baseCount)} messages, found ${messages.length}`,
        );
      }
      if (!Array.isArray(delta.appended)) throw new Error('delta has no appended list');
      raw = { ...asObject(delta.head, 'delta head'), messages: [...messages, ...delta.appended] };
    }
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
  delete raw[FORMAT_FIELD];
  if (raw.id !== expectedId) {
    return { ok: false, reason: `document id ${JSON.stringify(raw.id)} is not "${expectedId}"` };
  }
  if (!Array.isArray(raw.messages)) return { ok: false, reason: 'messages is not a list' };
  const problems: DecodeProblem[] = [];
  const messages: Message[] = [];
  for (const [index, candidate] of raw.messages.entries()) {
    const message = decodeMessage(candidate, `messages[${index}]`, problems, now);
    if (message === null) return { ok: false, reason: `messages[${index}] cannot be read` };
    // A3: a message nested past the limit could not be saved (or frozen, or encoded) again.
    // A message of plain fields (the common one) cannot be: it is not walked.
    const tooDeep = hasObjectField(message)
      ? findUnstorableValue(message, {
          rootPath: `messages[${index}]`,
          rootDepth: MESSAGE_DEPTH,
          maxDepth: MAX_SESSION_DEPTH,
        })
      : null;
    if (tooDeep !== null) return { ok: false, reason: `${tooDeep.path} ${tooDeep.reason}` };
    messages.push(message);
  }
  const session = {
    ...raw,
    id: expectedId,
    title: field(raw, 'title', (value) => typeof value === 'string', '', problems),
    createdAt: field(raw, 'createdAt', isTimestamp, 0, problems),
    updatedAt: field(raw, 'updatedAt', isTimestamp, 0, problems),
    revision: stored.revision,
    messages,
    pending: decodePending(raw.pending, problems, now),
    toolCalls: decodeToolCalls(raw.toolCalls, problems),
    parentId: field(raw, 'parentId', isNullableId, null, problems),
    rotatedTo: field(raw, 'rotatedTo', isNullableId, null, problems),
    metadata: field(raw, 'metadata', isPlainObject, {}, problems),
  } as Session;
  resetTooDeepFields(session, problems);
  return { ok: true, session, problems, byteSize };
}

/** The level of a message in a session document: the session, its messages, the message. */
const MESSAGE_DEPTH = 3;

function hasObjectField(message: Message): boolean {
  const fields = message as unknown as Record<string, unknown>;
  for (const key in fields) {
    const value = fields[key];
    if (typeof value === 'object' && value !== null) return true;
  }
  return false;
}

/** What a head field nested past the depth limit is reset to (A5); other fields are dropped. */
const TOO_DEEP_RESETS: Readonly<Record<string, () => unknown>> = {
  metadata: () => ({}),
  toolCalls: () => [],
  pending: () => null,
};

/**
 * A3, A5: a head field nested past MAX_SESSION_DEPTH (the store never writes one; another
 * tool may have) is reset and reported, like any invalid side field: kept, it would make the
 * session impossible to save, and deep enough, overflow the stack of whatever encodes it.
 */
function resetTooDeepFields(session: Session, problems: DecodeProblem[]): void {
  const head = session as unknown as Record<string, unknown>;
  for (const key of Object.keys(head)) {
    const value = head[key];
    if (key === 'messages' || typeof value !== 'object' || value === null) continue;
    const tooDeep = findUnstorableValue(value, {
      rootPath: key,
      rootDepth: 2,
      maxDepth: MAX_SESSION_DEPTH,
    });
    if (tooDeep === null) continue;
    problems.push({ field: key, message: `${tooDeep.path} ${tooDeep.reason}; reset` });
    const reset = TOO_DEEP_RESETS[key];
    if (reset === undefined) delete head[key];
    else head[key] = reset();
  }
}

function decodeMessage(
  candidate: unknown,
  path: string,
  problems: DecodeProblem[],
  now: number,
): Message | null {
  if (!isPlainObject(candidate)) return null;
  if (!idSchema.safeParse(candidate.id).success) return null;
  if (!messageRoleSchema.safeParse(candidate.role).success) return null;
  if (!contentSchema.safeParse(candidate.content).success) return null;
  const message: Record<string, unknown> = { ...candidate };
  const checks: Array<[string, (value: unknown) => boolean]> = [
    ['createdAt', isTimestamp],
    ['attachments', (value) => attachmentSchema.array().safeParse(value).success],
    ['partial', (value) => typeof value === 'boolean'],
    ['reasoning', (value) => typeof value === 'string'],
    ['runId', (value) => idSchema.safeParse(value).success],
    ['journal', (value) => journalTagSchema.safeParse(value).success],
    ['recovered', (value) => typeof value === 'boolean'],
    ['marker', (value) => markerSchema.safeParse(value).success],
  ];
  for (const [name, valid] of checks) {
    if (!(name in message) || valid(message[name])) continue;
    if (name === 'marker') {
      const repaired = repairMarker(message.marker);
      if (repaired !== null) {
        message.marker = repaired;
        problems.push({ field: `${path}.marker.retry`, message: 'invalid retry state dropped' });
        continue;
      }
    }
    problems.push({ field: `${path}.${name}`, message: `invalid ${name} reset` });
    if (name === 'createdAt') message.createdAt = now;
    else delete message[name];
  }
  if (!('createdAt' in message)) message.createdAt = now;
  return message as Message;
}

/** A marker whose only fault is its retry state keeps its type and is demoted later. */
function repairMarker(value: unknown): Message['marker'] | null {
  if (!isPlainObject(value)) return null;
  const { retry: _retry, ...rest } = value;
  const parsed = markerSchema.safeParse(rest);
  return parsed.success ? parsed.data : null;
}

function decodePending(value: unknown, problems: DecodeProblem[], now: number) {
  if (value === null || value === undefined) return null;
  const parsed = pendingTurnSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  // A5: keep the user's message whenever it can be read; reset only what is broken.
  if (isPlainObject(value) && idSchema.safeParse(value.streamId).success) {
    const userMessage = decodeMessage(value.userMessage, 'pending.userMessage', problems, now);
    if (userMessage !== null) {
      problems.push({ field: 'pending', message: 'invalid pending-turn fields reset' });
      const attachments = attachmentSchema.array().safeParse(value.attachments);
      return {
        streamId: value.streamId as string,
        userMessage,
        attachments: attachments.success ? attachments.data : [],
        // A5, F1: a start that cannot be read is taken as long ago (the earliest valid
        // time), never as the time of reading: reset to "now" on every load, the turn would
        // never be past the grace period and block the session forever. Other signs of
        // life (a heartbeat, journal records) still count.
        startedAt: isTimestamp(value.startedAt) && value.startedAt > 0 ? value.startedAt : 1,
        ...(isTimestamp(value.heartbeatAt) && value.heartbeatAt > 0
          ? { heartbeatAt: value.heartbeatAt }
          : {}),
        // An owner that cannot be read is dropped: the turn then waits for the grace (F1).
        ...(typeof value.ownerId === 'string' &&
        value.ownerId.length > 0 &&
        value.ownerId.length <= 512
          ? { ownerId: value.ownerId }
          : {}),
      };
    }
  }
  problems.push({ field: 'pending', message: 'unreadable pending turn reset' });
  return null;
}

function decodeToolCalls(value: unknown, problems: DecodeProblem[]) {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problems.push({ field: 'toolCalls', message: 'toolCalls is not a list; reset' });
    return [];
  }
  const valid = value.filter((entry) => toolCallSchema.safeParse(entry).success);
  if (valid.length !== value.length) {
    problems.push({
      field: 'toolCalls',
      message: `${value.length - valid.length} invalid dropped`,
    });
  }
  return valid;
}

function field<T>(
  raw: Record<string, unknown>,
  name: string,
  valid: (value: unknown) => boolean,
  fallback: T,
  problems: DecodeProblem[],
): T {
  const value = raw[name];
  if (valid(value)) return value as T;
  if (value !== undefined) problems.push({ field: name, message: `invalid ${name} reset` });
  return fallback;
}

function isTimestamp(value: unknown): value is number {
  return timestampSchema.safeParse(value).success;
}

function isNullableId(value: unknown): boolean {
  return value === null || idSchema.safeParse(value).success;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new Error(`${what} is not an object`);
  return value;
}

/**
 * B5: marks summary views. A view lacks the transcript and everything private, so writing it
 * (or a copy of it spread into a new object) would erase them: the encoders refuse it. A save
 * of the view itself is refused before that (DetachedCopies); a copy of a session with stored
 * messages is refused as a shrink first (B5), so this only decides for sessions without any.
 */
const SUMMARY_VIEW = Symbol.for('keepsake.summaryView');

/**
 * A4, B7: a summary read (a `list()` entry, a `load(id, { summaryOnly: true })` view) shows a
 * session's summary and nothing private. Private to full loads are:
 * - `metadata`;
 * - every field Keepsake does not define on the session (A4's extra fields), which is where
 *   applications keep provider state (encrypted reasoning items, provider response ids…);
 * - the transcript: `messages` and `toolCalls`.
 * A summary view keeps what Keepsake defines of the head: id, title, timestamps, revision, the
 * pending turn (the turn in flight, which `list()` reports as a flag) and the id rotation.
 */
export function summaryViewOf(session: Session): Session {
  const view = {
    id: session.id,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    revision: session.revision,
    messages: [],
    // A copy: the view is detached, and changing it must not change the live session.
    pending: session.pending === null ? null : structuredClone(session.pending),
    toolCalls: [],
    parentId: session.parentId,
    rotatedTo: session.rotatedTo,
    metadata: {},
    // Enumerable, so a spread or Object.assign copy of the view carries it too (JSON and
    // structuredClone leave symbols out, and so does the stored document).
    [SUMMARY_VIEW]: true,
  };
  return view as Session;
}

export function assertNotSummaryView(value: object): void {
  if ((value as Record<symbol, unknown>)[SUMMARY_VIEW] === true) {
    throw new SummaryOnlyError(String((value as { id?: unknown }).id));
  }
}

export function summaryOf(session: Session): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    messageCount: session.messages.length,
    pending: session.pending !== null,
    parentId: session.parentId,
    rotatedTo: session.rotatedTo,
  };
}

/** A4: the first reserved field name found on the object, if any. */
export function findReservedField(value: Record<string, unknown>): string | null {
  for (const key of Object.keys(value)) {
    if (key.startsWith(RESERVED_PREFIX)) return key;
  }
  return null;
}

/** Freezes a saved message so in-place edits fail loudly instead of being missed. */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const child of Object.values(value)) deepFreeze(child);
  return Object.freeze(value);
}
