/**
 * The exit codes of `keepsake`, one per kind of outcome, so a script can tell "the store has
 * problems" from "the server is down" from "you typed the URL wrong" without reading the
 * message. The README's table is generated from nothing: keep the two in step (a test
 * compares them).
 */
export const EXIT_CODES = {
  /** Everything asked was done, and every check passed. */
  ok: 0,
  /** An unexpected failure: a bug, or an error no row below describes. */
  failure: 1,
  /** The command line is wrong: an unknown command or option, a missing or invalid argument. */
  usage: 2,
  /** A backend URL that cannot be parsed: unknown scheme, malformed, unknown or bad option. */
  badUrl: 3,
  /** A known scheme whose adapter cannot be loaded (`s3://` without @aws-sdk/client-s3). */
  schemeUnavailable: 4,
  /** The backend cannot be reached: connection refused, unknown host, timeout. */
  unreachable: 5,
  /** The backend refused access: file permissions, a read-only filesystem, Redis AUTH or ACL. */
  permission: 6,
  /** The backend failed otherwise: an I/O error, a full disk, durability it cannot confirm. */
  backendError: 7,
  /** What was named is not there: no store at that path, no such session or quarantine entry. */
  notFound: 8,
  /** A check found problems: `verify`, or the comparison that ends migrate, import, export. */
  problemsFound: 9,
  /** migrate or import into a target that already holds data, without --resume or --force. */
  targetNotEmpty: 10,
  /** --resume found a document or journal in the target that differs from the source's. */
  conflict: 11,
  /** An import file that is not a complete Keepsake export (malformed, truncated, altered). */
  badInput: 12,
} as const;

export type ExitCodeName = keyof typeof EXIT_CODES;
export type ExitCode = (typeof EXIT_CODES)[ExitCodeName];
