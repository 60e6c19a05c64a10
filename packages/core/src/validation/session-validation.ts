import { InvalidInputError, ReservedFieldError } from '../errors/input-errors.js';
import { findReservedField, headOf, isPlainObject } from '../sessions/documents/document-codec.js';
import {
  type KnownIdsHolder,
  knownHolds,
  knownIdsOf,
  rememberIds,
} from '../sessions/message-ids.js';
import { ID_PATTERN, randomId } from './ids.js';
import {
  findUnstorableField,
  findUnstorableValue,
  MAX_SESSION_DEPTH,
  type UnstorableValue,
} from './json-value.js';
import {
  type Message,
  messageRoleSchema,
  messageSchema,
  type Session,
  sessionSchema,
  writablePendingTurnSchema,
} from './schemas.js';

const headSchema = sessionSchema
  .omit({ messages: true })
  .extend({ pending: writablePendingTurnSchema.nullable() });

/** The level of a message in a session document: the session, its messages, the message. */
const MESSAGE_DEPTH = 3;

/**
 * A4, A1, E1 and schema checks of what the caller wrote, before anything is written: the
 * session and the parts the store changes in place are mutable, every value is one JSON
 * stores as it is (json-value.ts), no field is reserved, and the head (a pending turn
 * included) matches its schema. The messages are checked by normalizeMessages.
 */
export function assertWritable(session: Session): void {
  assertMutable(session);
  const subject = `Session "${String(session.id)}"`;
  const reserved = findReservedField(session);
  if (reserved !== null) throw new ReservedFieldError(reserved, `session "${session.id}"`);
  const unstorable = findUnstorableField(session, {
    skip: 'messages',
    depth: 1,
    maxDepth: MAX_SESSION_DEPTH,
  });
  if (unstorable !== null) throw unstorableError(subject, unstorable);
  // A plain head is valid by construction (see isPlainHead): the schema would agree, slower.
  if (!isPlainHead(session)) assertHeadSchema(session, subject);
  if (session.pending !== null) {
    const field = findReservedField(session.pending.userMessage);
    if (field !== null) throw new ReservedFieldError(field, 'the pending user message');
  }
}

function assertHeadSchema(session: Session, subject: string): void {
  const head = headSchema.safeParse(headOf(session));
  if (!head.success) {
    const issue = head.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    throw new InvalidInputError(
      `${subject} has an invalid field \`${path}\`: ${issue?.message}; nothing was written`,
      { cause: head.error, path },
    );
  }
}

/**
 * The common head, checked without zod: every field a plain value the head schema accepts,
 * no pending turn and no tool calls (those go through the schema). True only for heads the
 * schema accepts (a subset of them; any other head is checked by the schema), so a save's
 * outcome is the same either way. Called after findUnstorableField: the values are JSON.
 */
function isPlainHead(session: Session): boolean {
  const metadata = session.metadata as unknown;
  return (
    PLAIN_HEAD_CHECKED &&
    isId(session.id) &&
    typeof session.title === 'string' &&
    isTimestamp(session.createdAt) &&
    isTimestamp(session.updatedAt) &&
    Number.isSafeInteger(session.revision) &&
    session.revision >= 0 &&
    session.pending === null &&
    Array.isArray(session.toolCalls) &&
    session.toolCalls.length === 0 &&
    (session.parentId === null || isId(session.parentId)) &&
    (session.rotatedTo === null || isId(session.rotatedTo)) &&
    typeof metadata === 'object' &&
    metadata !== null &&
    Object.getPrototypeOf(metadata) === Object.prototype &&
    !Object.hasOwn(metadata, 'constructor')
  );
}

/**
 * The common message, checked without zod: id, role, string content and creation time, and
 * none of the optional fields (a message with any of them goes through the schema). True
 * only for messages the message schema accepts.
 */
function isPlainMessage(message: Record<string, unknown>): boolean {
  return (
    isId(message.id) &&
    typeof message.content === 'string' &&
    ROLES.has(message.role) &&
    isTimestamp(message.createdAt) &&
    OPTIONAL_MESSAGE_FIELDS.every((field) => message[field] === undefined)
  );
}

const ROLES: ReadonlySet<unknown> = new Set(messageRoleSchema.options);
const REQUIRED_MESSAGE_FIELDS = ['id', 'role', 'content', 'createdAt'];
/** Every other field of the message schema, read from it: a field added there is seen here. */
const OPTIONAL_MESSAGE_FIELDS = Object.keys(messageSchema.shape).filter(
  (field) => !REQUIRED_MESSAGE_FIELDS.includes(field),
);
/**
 * The head fields isPlainHead checks. Should the schema gain a field, the shortcut turns
 * itself off (every head then goes through the schema) rather than skip the new field.
 */
const PLAIN_HEAD_CHECKED =
  Object.keys(headSchema.shape).sort().join() ===
  [
    'createdAt',
    'id',
    'metadata',
    'parentId',
    'pending',
    'revision',
    'rotatedTo',
    'title',
    'toolCalls',
    'updatedAt',
  ].join();

function isId(value: unknown): boolean {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

function isTimestamp(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * B4: the store sets `revision` and `updatedAt` on the session it saves and keeps that object
 * as the live session, a run adds to its messages and tool calls and stamps its pending
 * turn. A frozen one (Object.freeze, Immer's produce) would take the write and then throw,
 * and every later save would conflict with that write; it is refused before anything is
 * written instead.
 */
function assertMutable(session: Session): void {
  // Checked one by one (no list of parts is built: this runs on every save).
  assertPartMutable(session, 'the session object', session);
  assertPartMutable(session, '`messages`', session.messages);
  assertPartMutable(session, '`toolCalls`', session.toolCalls);
  assertPartMutable(session, '`pending`', session.pending);
  const odd = findOddField(session);
  if (odd !== null) {
    throw new InvalidInputError(
      `Session "${String(session.id)}" cannot be saved: its field \`${odd.field}\` ${odd.reason}. Nothing was written. ` +
        'Save a copy whose fields are plain, enumerable values and go on with the session save() returns.',
      { path: odd.field },
    );
  }
}

/** The fields of a session, which JSON must see (a document without its id is unreadable). */
const SESSION_FIELDS: ReadonlySet<string> = new Set(Object.keys(sessionSchema.shape));

/**
 * B4, A4 (issue 35): a field of the session object the store could not keep as it does. The
 * store sets `revision` and `updatedAt` on the session it saves, and a reload or a refresh
 * replaces every field of the live session in place (deleted, then defined again): each own
 * field must be a plain data property, writable and deletable — not read-only, not a getter,
 * not non-configurable (as `Object.defineProperty` makes one by default). Such a field used to
 * take the write and then throw a TypeError, or make a later reload throw half-way through,
 * leaving the live session without its id. And the session's own fields must be enumerable:
 * JSON leaves out what it does not see, and a document stored without its id is unreadable.
 * Null when every field is plain. One descriptor per own field: about half a microsecond.
 */
export function findOddField(session: object): { field: string; reason: string } | null {
  let sessionFields = 0;
  for (const key of Object.keys(session)) {
    if (SESSION_FIELDS.has(key)) sessionFields++;
    const descriptor = Object.getOwnPropertyDescriptor(session, key);
    if (descriptor === undefined || (descriptor.writable === true && descriptor.configurable)) {
      continue;
    }
    const reason =
      descriptor.writable === undefined
        ? 'is a getter or setter, not a value; the store writes and replaces the fields of a session in place'
        : !descriptor.writable
          ? 'is read-only; the store sets `revision` and `updatedAt` on the session it saves and replaces its fields on a reload'
          : 'cannot be deleted (non-configurable); the store replaces the fields of the live session in place on a reload';
    return { field: key, reason };
  }
  if (sessionFields === SESSION_FIELDS.size) return null;
  for (const field of SESSION_FIELDS) {
    if (field in session && !Object.prototype.propertyIsEnumerable.call(session, field)) {
      return {
        field,
        reason:
          'is not an own enumerable property, so JSON would leave it out of the stored document',
      };
    }
  }
  return null;
}

function assertPartMutable(session: Session, part: string, value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isExtensible(value)) return;
  throw new InvalidInputError(
    `Session "${String(session.id)}" cannot be saved: ${part} is frozen or sealed (Object.freeze, or state produced by Immer). ` +
      'The store sets `revision` and `updatedAt` on the session it saves and keeps it as the live session, and a run adds to its ' +
      'messages, tool calls and pending turn, so these must stay mutable. Nothing was written. Save a mutable copy, for example ' +
      '`{ ...session, messages: [...session.messages], toolCalls: [...session.toolCalls], pending: session.pending && { ...session.pending } }` ' +
      '(saved messages may stay frozen), and go on with the session save() returns; with Immer, setAutoFreeze(false) also works.',
    { path: part === 'the session object' ? '' : part.slice(1, -1) },
  );
}

/**
 * Fills ids and timestamps of new messages and validates them (stored ones were checked),
 * and B5: refuses a message id used twice, since removing one copy would then not count as
 * removing a message. Only the messages after the unchanged stored prefix are walked; their
 * ids are checked against the stored ones through message-ids.ts, and not at all when every
 * id was just generated. Returns whether the messages start with every stored message (the
 * one walk over the transcript a save makes: the save then needs no other to tell).
 */
export function normalizeMessages(
  session: Session,
  stored: readonly Message[],
  now: number,
  holder: KnownIdsHolder,
): boolean {
  if (!Array.isArray(session.messages)) {
    throw new InvalidInputError(`Session "${session.id}" messages must be an array`, {
      path: 'messages',
    });
  }
  const messages = session.messages;
  let firstChanged = 0;
  while (firstChanged < stored.length && messages[firstChanged] === stored[firstChanged]) {
    firstChanged++;
  }
  // Stored messages are frozen and were validated when written; check only the rest.
  const storedSet = firstChanged < stored.length ? new Set(stored) : null;
  const laterIds = new Set<string>();
  let prefixMayHoldThem = false;
  for (let index = firstChanged; index < messages.length; index++) {
    const candidate = messages[index];
    let message = candidate as Message;
    if (storedSet?.has(message) === true) {
      prefixMayHoldThem = true;
    } else {
      // A generated id is unique by construction: it needs no scan of the prefix.
      if (!isPlainObject(candidate) || candidate.id !== undefined) prefixMayHoldThem = true;
      message = normalizeMessage(
        candidate,
        now,
        `Session "${session.id}" messages[${index}]`,
        `messages[${index}]`,
      );
      if (message !== candidate) messages[index] = message;
    }
    if (laterIds.has(message.id)) throw duplicateIdError(session, message.id);
    laterIds.add(message.id);
  }
  // Appending to the stored transcript (the common save): its ids are known from the last
  // save, checked in O(appended). Otherwise the unchanged prefix is read once.
  const known = firstChanged === stored.length ? knownIdsOf(holder, stored) : null;
  if (prefixMayHoldThem) {
    const repeated =
      known !== null
        ? [...laterIds].find((id) => knownHolds(known, id))
        : messages.slice(0, firstChanged).find((message) => laterIds.has(message.id))?.id;
    if (repeated !== undefined) throw duplicateIdError(session, repeated);
  }
  rememberIds(holder, messages, stored, known);
  return firstChanged === stored.length;
}

function duplicateIdError(session: Session, id: string): InvalidInputError {
  const positions = session.messages
    .map((message, index) => (message.id === id ? index : -1))
    .filter((index) => index >= 0);
  return new InvalidInputError(
    `Session "${session.id}" has more than one message with id "${id}" (messages[${positions.join('], messages[')}]); ` +
      'message ids must be unique in a session, or removing one would not count as a removal (B5). Nothing was written.',
    { path: `messages[${positions.at(-1) ?? 0}].id` },
  );
}

/**
 * Validates one caller-written message and fills `id` and `createdAt` when missing. `where`
 * names it in error messages and `path` (when it is in a session) in the error's `path`. It
 * sits at level 3 of a session document (messages, a pending turn's user message), which the
 * depth limit counts from.
 */
export function normalizeMessage(
  candidate: unknown,
  now: number,
  where: string,
  path = '',
): Message {
  if (!isPlainObject(candidate)) {
    throw new InvalidInputError(`${where} must be an object`, { path });
  }
  const unstorable = findUnstorableValue(candidate, {
    rootDepth: MESSAGE_DEPTH,
    maxDepth: MAX_SESSION_DEPTH,
  });
  if (unstorable !== null) throw unstorableError(where, unstorable, path);
  const reserved = findReservedField(candidate);
  if (reserved !== null) throw new ReservedFieldError(reserved, where);
  const filled =
    candidate.id === undefined || candidate.createdAt === undefined
      ? { ...candidate, id: candidate.id ?? randomId(), createdAt: candidate.createdAt ?? now }
      : candidate;
  if (isPlainMessage(filled)) return filled as Message;
  const parsed = messageSchema.safeParse(filled);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const issuePath = issue?.path.join('.') ?? '';
    throw new InvalidInputError(`${where} is invalid at \`${issuePath}\`: ${issue?.message}`, {
      cause: parsed.error,
      path: joinPath(path, issuePath),
    });
  }
  return filled as Message;
}

/**
 * The create() input, its messages included so a refusal names `messages[i]…` (they are
 * walked again as they are normalized; create is not the hot path a save is).
 */
export function assertCreateInput(input: unknown): void {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidInputError('create() takes an object', { path: '' });
  }
  const unstorable = findUnstorableField(input, { depth: 1, maxDepth: MAX_SESSION_DEPTH });
  if (unstorable !== null) throw unstorableError('create()', unstorable);
}

/**
 * InvalidInputError for a value JSON would not store as it is. The message names the value
 * from `subject`; the error's `path` starts at `pathPrefix` (a message's place in its session).
 */
export function unstorableError(
  subject: string,
  problem: UnstorableValue,
  pathPrefix = '',
): InvalidInputError {
  const at = problem.path === '' ? '' : `: \`${problem.path}\``;
  return new InvalidInputError(`${subject}${at} ${problem.reason}. Nothing was written.`, {
    cause: problem.cause,
    path: joinPath(pathPrefix, problem.path),
  });
}

function joinPath(prefix: string, path: string): string {
  if (prefix === '' || path === '') return prefix + path;
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`;
}
