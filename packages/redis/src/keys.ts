import { assertValidId, type Collection, InvalidIdError } from '@keepsake/core';

/** `<sessionId>.<revision>`: the id of a retained revision (B5). */
const REVISION_ID = /^([A-Za-z0-9_-]{1,128})\.(\d{1,16})$/;

/** The key of one stored document (base, deltas and trailers in one string). */
export interface DocumentKeys {
  readonly document: string;
  /** The session id whose hash tag the keys carry. */
  readonly sessionId: string;
}

/**
 * Key names. Every key of one session carries the session id as its hash tag
 * (`<prefix>:{<sessionId>}:…`), so each script that touches several keys of one session
 * runs on one Cluster slot (H2). What belongs to the namespace as a whole (the session
 * index, the id registries, the quarantine list) carries one tag of its own,
 * `{<prefix>:ns}`, which no session id can equal (ids never contain `:`).
 *
 * Ids arrive validated by core and are checked again before they become key names (A1):
 * a brace or a key-pattern character can never reach Redis.
 */
export class KeyLayout {
  readonly prefix: string;
  readonly namespaceTag: string;

  constructor(prefix: string) {
    this.prefix = prefix;
    this.namespaceTag = `${prefix}:{${prefix}:ns}`;
  }

  document(collection: Collection, id: string): DocumentKeys {
    if (collection === 'revisions') {
      const match = REVISION_ID.exec(id);
      if (match === null) {
        throw new InvalidIdError('retained revision', id, 'must be "<sessionId>.<revision>"');
      }
      const sessionId = match[1]!;
      return { document: `${this.prefix}:{${sessionId}}:revision:${match[2]}`, sessionId };
    }
    const sessionId = this.sessionId(id);
    const name = collection === 'sessions' ? 'session' : 'lifecycle';
    return { document: `${this.prefix}:{${sessionId}}:${name}`, sessionId };
  }

  /** The stream of one run's journal (E2). */
  journal(sessionId: string, runId: string): string {
    return `${this.journalPrefix(sessionId)}${this.runId(runId)}`;
  }

  /** What every journal key of a session starts with (scripts complete it with a run id). */
  journalPrefix(sessionId: string): string {
    return `${this.prefix}:{${this.sessionId(sessionId)}}:journal:`;
  }

  /** The set of run ids that have a journal under the session. */
  journals(sessionId: string): string {
    return `${this.prefix}:{${this.sessionId(sessionId)}}:journals`;
  }

  /** Where quarantined bytes of a document go: same slot as the document, so moved atomically. */
  quarantined(collection: Collection, id: string, unique: string): string {
    const { sessionId } = this.document(collection, id);
    return `${this.prefix}:{${sessionId}}:quarantine:${collection}:${id}:${unique}`;
  }

  /** Whether `location` is a quarantine key of this layout (readQuarantined reads no other key). */
  isQuarantineKey(location: string): boolean {
    return (
      location.startsWith(`${this.prefix}:{`) &&
      /^\{[A-Za-z0-9_-]{1,128}\}:quarantine:/.test(location.slice(this.prefix.length + 1))
    );
  }

  /** The ids of one collection, a sorted set read by `listDocuments`. */
  registry(collection: Collection): string {
    return `${this.namespaceTag}:ids:${collection}`;
  }

  /** Records of what was quarantined (A2), oldest first. */
  quarantineList(): string {
    return `${this.namespaceTag}:quarantine`;
  }

  /** The session index (B7): one hash, id → order member and summary. */
  index(): string {
    return `${this.namespaceTag}:index`;
  }

  /** Where a rebuild of the index writes before it renames the result into place (B7). */
  indexBuild(token: string): string {
    return `${this.namespaceTag}:index-build:${token}`;
  }

  private sessionId(id: string): string {
    return assertValidId(id, 'session');
  }

  private runId(id: string): string {
    return assertValidId(id, 'run');
  }
}
