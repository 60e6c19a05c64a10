import { EXIT_CODES, type ExitCodeName } from './exit-codes.js';

/**
 * Errors the CLI raises itself. Each names the exit code it ends the process with, and its
 * message is what the operator reads: what is wrong, and what to do about it. The
 * `Symbol.for` marker makes `isInstance` work across copies of the package.
 */
const cliErrorMarker = Symbol.for('keepsake.cli-error');

export class CliError extends Error {
  readonly [cliErrorMarker] = true;
  readonly exitCode: number;
  readonly kind: ExitCodeName;

  constructor(kind: ExitCodeName, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.kind = kind;
    this.exitCode = EXIT_CODES[kind];
  }

  static isInstance(error: unknown): error is CliError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[cliErrorMarker] === true
    );
  }
}

/** A command line that cannot be run as written. */
export class UsageError extends CliError {
  constructor(message: string) {
    super('usage', message);
    this.name = 'UsageError';
  }
}

/** A backend URL that cannot be parsed or names an unknown option. */
export class BadBackendUrlError extends CliError {
  readonly url: string;
  constructor(url: string, reason: string, options: { cause?: unknown } = {}) {
    super('badUrl', `Bad backend URL "${url}": ${reason}`, options);
    this.name = 'BadBackendUrlError';
    this.url = url;
  }
}

/** A scheme the CLI knows but cannot open in this build. */
export class SchemeNotAvailableError extends CliError {
  readonly scheme: string;
  constructor(scheme: string, reason: string) {
    super(
      'schemeUnavailable',
      `The ${scheme}:// backend is not available in this build: ${reason}`,
    );
    this.name = 'SchemeNotAvailableError';
    this.scheme = scheme;
  }
}

/** The backend cannot be reached (the CLI's own connection check failed). */
export class BackendUnreachableError extends CliError {
  constructor(backend: string, reason: string, options: { cause?: unknown } = {}) {
    super('unreachable', `Cannot reach ${backend}: ${reason}`, options);
    this.name = 'BackendUnreachableError';
  }
}

/** The backend refused access. */
export class PermissionDeniedError extends CliError {
  constructor(backend: string, reason: string, options: { cause?: unknown } = {}) {
    super('permission', `Permission denied on ${backend}: ${reason}`, options);
    this.name = 'PermissionDeniedError';
  }
}

/** Nothing is stored where the command looked. */
export class NothingThereError extends CliError {
  constructor(message: string) {
    super('notFound', message);
    this.name = 'NothingThereError';
  }
}

/** migrate or import would write into a target that already holds data. */
export class TargetNotEmptyError extends CliError {
  constructor(message: string) {
    super('targetNotEmpty', message);
    this.name = 'TargetNotEmptyError';
  }
}

/** --resume found something in the target that the source does not hold as it is. */
export class MigrationConflictError extends CliError {
  readonly item: string;
  constructor(item: string, reason: string) {
    super(
      'conflict',
      `${item} in the target differs from the source's (${reason}); nothing of it was overwritten. ` +
        "If the target is meant to be replaced, run again with --force: a differing document is then moved to the target's quarantine first (restorable with `keepsake quarantine restore`).",
    );
    this.name = 'MigrationConflictError';
    this.item = item;
  }
}

/** An import file that is not a complete, unaltered Keepsake export. */
export class BadExportFileError extends CliError {
  readonly file: string;
  constructor(file: string, reason: string) {
    super(
      'badInput',
      `${file} is not a complete Keepsake export: ${reason}. Nothing was imported.`,
    );
    this.name = 'BadExportFileError';
    this.file = file;
  }
}

/** A check found problems; the report was printed before this is thrown. */
export class ProblemsFoundError extends CliError {
  readonly problems: number;
  constructor(problems: number, what: string) {
    super('problemsFound', `${what}: ${problems} problem${problems === 1 ? '' : 's'} found`);
    this.name = 'ProblemsFoundError';
    this.problems = problems;
  }
}
