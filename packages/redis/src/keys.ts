import {
  assertCollection,
  assertValidId,
  type Collection,
  documentGroup,
  InvalidInputError,
} from '@keepsake/core';

/** The key of one stored document (base, deltas and trailers in one string). */
export interface DocumentKeys {
  readonly document: string;
  /**
   * The hash tag the document's keys carry (core's `documentGroup`): the session id of a
   * session, its lifecycle state and its retained revisions; the run id of a run record; the
   * first segment (the LangGraph thread) of a checkpoint or checkpoint-writes document.
   */
  readonly group: string;
}

/**
 * Key names. Every key of one session carries the session id as its hash tag
 * (`<prefix>:{<sessionId>}:…`), so each script that touches several keys of one session
 * runs on one Cluster slot (H2); a run record carries its run id, and every checkpoint and
 * checkpoint-writes document of one LangGraph thread carries the thread's segment (core's
 * `documentGroup`), so one thread's documents share a slot. What belongs to the namespace as a whole (the session
 * index, the id registries, the quarantine list) carries one tag of its own,
 * `{<prefix>:ns}`, which no session id can equal (ids never contain `:`).
 *
 * Ids arrive validated by core and are checked again before they become key names (A1):
 * a brace or a key-pattern character can never reach Redis.
 */
export class KeyLayout {
  readonly prefix: string;
  readonly namespaceTag: string;
  /** Made once: every save names it. */
  private readonly indexKey: string;

  constructor(prefix: string) {
    this.prefix = prefix;
    this.namespaceTag = `${prefix}:{${prefix}:ns}`;
    this.indexKey = `${this.namespaceTag}:index`;
  }

  /**
   * The key of a document. Each collection has a name of its own after the tag, so the same
   * id in two collections is two keys; unknown collections are refused (InvalidInputError),
   * never mapped onto another collection's key. Ids are checked by core's `documentGroup`.
   */
  document(collection: Collection, id: string): DocumentKeys {
    const group = documentGroup(collection, id);
    const tagged = `${this.prefix}:{${group}}`;
    switch (collection) {
      case 'sessions':
        return { document: `${tagged}:session`, group };
      case 'lifecycle':
        return { document: `${tagged}:lifecycle`, group };
      case 'revisions':
        return { document: `${tagged}:revision:${id.slice(group.length + 1)}`, group };
      case 'runs':
        return { document: `${tagged}:run`, group };
      case 'checkpoints':
        return { document: `${tagged}:checkpoint:${id}`, group };
      case 'checkpoint-writes':
        return { document: `${tagged}:checkpoint-write:${id}`, group };
      default:
        throw new InvalidInputError(`redis adapter: no key for the collection "${collection}"`);
    }
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
    const { group } = this.document(collection, id);
    return `${this.prefix}:{${group}}:quarantine:${collection}:${id}:${unique}`;
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
    return `${this.namespaceTag}:ids:${assertCollection(collection)}`;
  }

  /** Records of what was quarantined (A2), oldest first. */
  quarantineList(): string {
    return `${this.namespaceTag}:quarantine`;
  }

  /** The session index (B7): one hash, id → order member and summary. */
  index(): string {
    return this.indexKey;
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
