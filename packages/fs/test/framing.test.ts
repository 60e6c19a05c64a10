import { crc32c } from '@node-rs/crc32';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeFrames, encodeFrame, lengthChecksum } from '../src/framing.js';
import {
  decodeJournalBatch,
  decodeLogEntry,
  encodeJournalBatchFrame,
  encodeLogEntryFrame,
  encodeLogEntryWithBatch,
} from '../src/records.js';

function lengthBytes(length: number): Uint8Array {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(length >>> 0, 0);
  return bytes;
}

const records = fc
  .tuple(
    fc.integer({ min: 1, max: 1_000_000 }),
    fc.array(
      fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 300 }),
        // Any UTF-16 units, lone surrogates included (UTF-8 gets U+FFFD for those).
        fc.string({ unit: 'binary', maxLength: 300 }),
        // Long texts too.
        fc.string({ unit: 'grapheme-ascii', minLength: 22_000, maxLength: 30_000 }),
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([first, texts]) => texts.map((text, index) => ({ sequence: first + index, text })));

describe('framing', () => {
  it('E2: the JS checksum of the length bytes equals the native CRC32C of them', () => {
    for (const length of [0, 1, 255, 256, 65_535, 65_536, 2 ** 24, 2 ** 32 - 1]) {
      expect(lengthChecksum(lengthBytes(length))).toBe(crc32c(Buffer.from(lengthBytes(length))));
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (length) => {
        const bytes = lengthBytes(length);
        expect(lengthChecksum(bytes)).toBe(crc32c(Buffer.from(bytes)) >>> 0);
      }),
    );
  });

  it('E3: a frame reads back whole; a changed byte or a zero-filled tail ends the valid part', () => {
    const payload = Buffer.from('{"type":"token"}');
    const frame = Buffer.from(encodeFrame(payload));
    const zeros = Buffer.alloc(64);
    const decoded = decodeFrames(Buffer.concat([frame, zeros]));
    expect(decoded.payloads.map((bytes) => Buffer.from(bytes).toString())).toEqual([
      '{"type":"token"}',
    ]);
    expect(decoded).toMatchObject({ validLength: frame.length, torn: true });
    for (let index = 0; index < frame.length; index++) {
      const damaged = Buffer.from(frame);
      damaged[index] = (damaged[index] as number) ^ 0x01;
      expect(decodeFrames(damaged).payloads).toEqual([]);
    }
  });

  it('E2: a log entry framed with its journal batch in one allocation is the same bytes as framed twice', () => {
    const identity = { nonce: '0123456789abcdef', sessionId: 'session-1', runId: 'Run_2' };
    fc.assert(
      fc.property(records, (batch) => {
        const journalFrame = encodeJournalBatchFrame(batch);
        const twice = encodeLogEntryFrame({ ...identity, frames: journalFrame });
        const once = encodeLogEntryWithBatch(identity, batch);
        expect(Buffer.from(once.logFrame).equals(Buffer.from(twice))).toBe(true);
        expect(Buffer.from(once.journalFrame).equals(Buffer.from(journalFrame))).toBe(true);
        const [payload] = decodeFrames(once.logFrame).payloads;
        const entry = decodeLogEntry(payload as Uint8Array);
        expect(entry).toMatchObject(identity);
        expect(Buffer.from(entry?.frames ?? []).equals(Buffer.from(journalFrame))).toBe(true);
        // Each text reads back as its UTF-8 encoding, with its sequence.
        const [batchPayload] = decodeFrames(journalFrame).payloads;
        expect(decodeJournalBatch(batchPayload as Uint8Array)).toEqual(
          batch.map(({ sequence, text }) => ({
            sequence,
            text: Buffer.from(text, 'utf8').toString('utf8'),
          })),
        );
      }),
    );
  });
});
