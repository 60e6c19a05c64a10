import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fsAdapter } from '@keepsake/fs';
import { describe, expect, it } from 'vitest';
import type { CliIo, OutputStream } from '../src/cli-io.js';
import { EXIT_CODES } from '../src/exit-codes.js';
import { runCli } from '../src/run-cli.js';
import { tempDirectory } from './helpers/run-keepsake.js';
import { fillSampleStore } from './helpers/sample-store.js';

/** A stream that says it is a terminal, recording what is drawn on it. */
function terminal(): { output: OutputStream; drawn: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 100 });
  let drawn = '';
  stream.on('data', (chunk: Buffer) => {
    drawn += chunk.toString('utf8');
  });
  return {
    output: {
      isTTY: true,
      stream: stream as unknown as NodeJS.WritableStream,
      write: async (text) => {
        drawn += text;
      },
    },
    drawn: () => drawn,
  };
}

function pipe(): { output: OutputStream; written: () => string } {
  let written = '';
  return {
    output: {
      isTTY: false,
      stream: null,
      write: async (text) => {
        written += text;
      },
    },
    written: () => written,
  };
}

describe('progress', () => {
  it('is a bar on a terminal and plain lines on a pipe; stdout only ever holds the result', async () => {
    const root = await tempDirectory('progress');
    try {
      const source = join(root.path, 'source');
      await fillSampleStore(fsAdapter({ directory: source }), { sessions: 12 });

      const tty = terminal();
      const stdout = pipe();
      const onTerminal: CliIo = {
        stdout: stdout.output,
        stderr: tty.output,
        cwd: root.path,
        env: {},
      };
      expect(
        await runCli(['migrate', '--from', source, '--to', join(root.path, 'a')], onTerminal),
      ).toBe(EXIT_CODES.ok);
      // cli-progress redraws in place: a carriage return or a cursor movement, and a bar.
      const escapeCharacter = String.fromCharCode(27);
      expect(tty.drawn().includes('\r') || tty.drawn().includes(`${escapeCharacter}[`)).toBe(true);
      expect(tty.drawn()).toMatch(/copy \[[█░]+\] \d+\/\d+/);
      expect(stdout.written()).toMatch(
        /^migrated .*\ncompared: .*\nsource checksum \w+\ntarget checksum \w+\n$/,
      );

      const stderr = pipe();
      const piped = pipe();
      const onPipes: CliIo = {
        stdout: piped.output,
        stderr: stderr.output,
        cwd: root.path,
        env: {},
      };
      expect(
        await runCli(['migrate', '--from', source, '--to', join(root.path, 'b')], onPipes),
      ).toBe(EXIT_CODES.ok);
      // No control characters on a pipe: one line per tenth, each ending in a newline.
      expect(stderr.written()).not.toContain('\r');
      expect(stderr.written()).not.toContain(escapeCharacter);
      const lines = stderr.written().trimEnd().split('\n');
      expect(lines.every((line) => /^(copy|verify): \d+\/\d+/.test(line))).toBe(true);
      expect(lines.filter((line) => line.startsWith('copy')).length).toBeLessThanOrEqual(12);

      const quiet = pipe();
      const quietIo: CliIo = {
        stdout: pipe().output,
        stderr: quiet.output,
        cwd: root.path,
        env: {},
      };
      expect(
        await runCli(['-q', 'migrate', '--from', source, '--to', join(root.path, 'c')], quietIo),
      ).toBe(EXIT_CODES.ok);
      expect(quiet.written()).toBe('');
    } finally {
      await root.remove();
    }
  });
});
