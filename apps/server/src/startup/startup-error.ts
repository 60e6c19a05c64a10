/**
 * The server cannot start with this configuration: the message names the setting (its
 * environment variable and config-file path), its value with secrets masked, and the fix.
 * `main` prints the message alone and exits 1.
 */
export class StartupError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** `redis://user:secret@host:port/0` → `redis://user:****@host:port/0`; not a URL → as is. */
export function maskUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '****';
    return url.toString();
  } catch {
    return text;
  }
}

/** An access key id shows its first four characters only; a secret shows nothing. */
export function maskKeyId(text: string): string {
  return text.length <= 4 ? '****' : `${text.slice(0, 4)}****`;
}
