/**
 * Every errno the adapter reads, classified once (the README's "Errors" table is this table).
 *
 * A failure becomes a typed error in `toBackendError` (errors.ts) by its class:
 * - `transient`: the same call may succeed if made again (a busy file, an interrupted or
 *   would-block call, an I/O error a network filesystem or a flaky device reports, a stale
 *   NFS handle, a full descriptor table): `BackendError` with `isRetryable: true`;
 * - `unreachable`: the filesystem's server cannot be reached (a network mount): a
 *   `BackendUnavailableError`, always retryable;
 * - `full`: no space or quota left. A retry fails the same way until someone frees space, so
 *   `isRetryable: false`, and the message says what to do;
 * - `permanent`: permissions, a read-only filesystem, a path that cannot be one: retrying
 *   the same call cannot help, `isRetryable: false`.
 * A code not listed is `permanent`: claiming a retry helps when nothing says so would be
 * dishonest.
 *
 * Some codes are also answers rather than failures in one place (ENOENT where absence is
 * meant, EEXIST on an exclusive create); the predicates below name those places.
 */
export type ErrnoClass = 'transient' | 'unreachable' | 'full' | 'permanent';

interface ErrnoEntry {
  readonly class: ErrnoClass;
  /** What the code means to this adapter (shown in the README table). */
  readonly meaning: string;
}

export const ERRNO_TABLE: Readonly<Record<string, ErrnoEntry>> = {
  EAGAIN: { class: 'transient', meaning: 'resource temporarily unavailable (would block)' },
  EWOULDBLOCK: { class: 'transient', meaning: 'same as EAGAIN' },
  EBUSY: { class: 'transient', meaning: 'file or device busy (another process has it open)' },
  EINTR: { class: 'transient', meaning: 'interrupted system call' },
  EIO: { class: 'transient', meaning: 'I/O error (network filesystems report timeouts so)' },
  ESTALE: { class: 'transient', meaning: 'stale NFS file handle (the file was replaced)' },
  ETXTBSY: { class: 'transient', meaning: 'file busy' },
  EMFILE: { class: 'transient', meaning: 'too many open files in this process' },
  ENFILE: { class: 'transient', meaning: 'too many open files on this system' },
  ENOMEM: { class: 'transient', meaning: 'out of kernel memory' },
  ENOBUFS: { class: 'transient', meaning: 'no buffer space' },
  ETIMEDOUT: { class: 'unreachable', meaning: 'the filesystem server did not answer' },
  ENOTCONN: { class: 'unreachable', meaning: 'the network mount is disconnected' },
  ECONNREFUSED: { class: 'unreachable', meaning: 'the filesystem server refused' },
  ECONNRESET: { class: 'unreachable', meaning: 'the connection to the server was reset' },
  ECONNABORTED: { class: 'unreachable', meaning: 'the connection to the server was aborted' },
  EHOSTDOWN: { class: 'unreachable', meaning: 'the filesystem server is down' },
  EHOSTUNREACH: { class: 'unreachable', meaning: 'no route to the filesystem server' },
  ENETDOWN: { class: 'unreachable', meaning: 'the network is down' },
  ENETUNREACH: { class: 'unreachable', meaning: 'the network is unreachable' },
  ENOSPC: { class: 'full', meaning: 'no space left on the device' },
  EDQUOT: { class: 'full', meaning: 'disk quota exceeded' },
  EFBIG: { class: 'full', meaning: 'file too large for this filesystem' },
  EACCES: { class: 'permanent', meaning: 'permission denied (see the sharing-violation retry)' },
  EPERM: {
    class: 'permanent',
    meaning: 'operation not permitted (see the sharing-violation retry)',
  },
  EROFS: { class: 'permanent', meaning: 'read-only filesystem' },
  ENOENT: { class: 'permanent', meaning: 'no such file or directory, where one must exist' },
  EEXIST: { class: 'permanent', meaning: 'file exists, where it must not' },
  ENOTDIR: { class: 'permanent', meaning: 'a path component is not a directory' },
  EISDIR: { class: 'permanent', meaning: 'is a directory' },
  ENOTEMPTY: { class: 'permanent', meaning: 'directory not empty' },
  ENAMETOOLONG: { class: 'permanent', meaning: 'file name too long' },
  ELOOP: { class: 'permanent', meaning: 'too many symbolic links' },
  EINVAL: { class: 'permanent', meaning: 'invalid argument' },
  EXDEV: { class: 'permanent', meaning: 'rename across filesystems' },
  EBADF: { class: 'permanent', meaning: 'bad file descriptor' },
  ENOTSUP: { class: 'permanent', meaning: 'operation not supported by this filesystem' },
  EOPNOTSUPP: { class: 'permanent', meaning: 'same as ENOTSUP' },
  ENOSYS: { class: 'permanent', meaning: 'function not implemented' },
  ENXIO: { class: 'permanent', meaning: 'no such device' },
  ENODEV: { class: 'permanent', meaning: 'no such device' },
};

/** The class of a failure's errno (`permanent` for an unknown or missing code). */
export function errnoClass(code: string | undefined): ErrnoClass {
  return (code === undefined ? undefined : ERRNO_TABLE[code]?.class) ?? 'permanent';
}

/** Whether making the same call again may succeed (`transient` or `unreachable`). */
export function isRetryableErrno(code: string | undefined): boolean {
  const kind = errnoClass(code);
  return kind === 'transient' || kind === 'unreachable';
}

// ── Codes that are an answer in one place ────────────────────────────────────────────

/** Absence, where absence is meant: a missing file or a missing parent directory. */
export function isNotFoundErrno(code: string | undefined): boolean {
  return code === 'ENOENT';
}

/** An exclusive create (`wx`, mkdir, symlink) met an existing entry. */
export function isAlreadyExistsErrno(code: string | undefined): boolean {
  return code === 'EEXIST';
}

/** rmdir of a directory someone uses again (not empty) or that is already gone. */
export function isDirectoryInUseOrGoneErrno(code: string | undefined): boolean {
  return code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT';
}

/** A path whose parent is a file, read as "nothing there" when listing leftovers. */
export function isNotADirectoryErrno(code: string | undefined): boolean {
  return code === 'ENOTDIR';
}

/**
 * B3: fsync of a directory this platform or filesystem cannot do (Windows: EPERM, EISDIR;
 * some network filesystems: EINVAL, ENOTSUP). Tolerated; EIO and every other code fail the
 * write.
 */
export function isUnsupportedDirectorySyncErrno(code: string | undefined): boolean {
  return code === 'EPERM' || code === 'EISDIR' || code === 'EINVAL' || code === 'ENOTSUP';
}

/**
 * B2: a rename over a file another process has open fails on Windows with a sharing
 * violation, reported as EPERM, EACCES or EBUSY (also on a Windows-served SMB share mounted on
 * Linux or macOS). Retried only when the `retrySharingViolations` option is on.
 */
export function isSharingViolationErrno(code: string | undefined): boolean {
  return code === 'EPERM' || code === 'EACCES' || code === 'EBUSY';
}

/** A filesystem without symbolic links: lock files fall back to exclusive-create files. */
export function isSymlinkUnsupportedErrno(code: string | undefined): boolean {
  return code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS' || code === 'EOPNOTSUPP';
}

/** readlink of a path that is not a symbolic link (a lock file of the fallback). */
export function isNotASymlinkErrno(code: string | undefined): boolean {
  return code === 'EINVAL';
}

/** `process.kill(pid, 0)` failed with EPERM: the process exists, owned by another user. */
export function isOtherUsersProcessErrno(code: string | undefined): boolean {
  return code === 'EPERM';
}
