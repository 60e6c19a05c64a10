/**
 * Where the CLI writes and what it knows of its terminal. `bin.ts` passes the process's
 * streams; tests pass buffers, so every command runs in-process against real backends.
 * Results go to stdout, progress and messages to stderr, so `keepsake export … > file` and
 * `keepsake ls --json | jq` never see a progress bar.
 */
export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface OutputStream {
  /** Resolves once the text was handed to the stream (waits for 'drain' when it is full). */
  write(text: string): Promise<void>;
  /** A terminal: progress bars and colours may be drawn on it. */
  readonly isTTY: boolean;
  /** The stream itself, for libraries that draw on it (cli-progress); null in tests. */
  readonly stream: NodeJS.WritableStream | null;
}

export function nodeStream(stream: NodeJS.WriteStream): OutputStream {
  return {
    isTTY: stream.isTTY === true,
    stream,
    write: (text) =>
      new Promise((resolve, reject) => {
        // A closed pipe (`keepsake ls | head`) is EPIPE: stop writing, it is not a failure.
        stream.write(text, (error) => {
          if (error && (error as NodeJS.ErrnoException).code !== 'EPIPE') reject(error);
          else resolve();
        });
      }),
  };
}

export function processIo(): CliIo {
  return {
    stdout: nodeStream(process.stdout),
    stderr: nodeStream(process.stderr),
    cwd: process.cwd(),
    env: process.env,
  };
}

/** Writes one line (a newline is added). */
export function writeLine(stream: OutputStream, text = ''): Promise<void> {
  return stream.write(`${text}\n`);
}
