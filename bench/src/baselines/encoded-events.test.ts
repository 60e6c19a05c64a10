import { crc32c } from '@node-rs/crc32';
import { describe, expect, it } from 'vitest';
import { framedJson, jsonLine, type TokenEvent } from './encoded-events.js';

// The floors are only honest if they do the work they claim: a whole record per event.
const event: TokenEvent = { type: 'token', data: { text: 'héllo "quoted" ✓' } };

describe('encoded events (the journal floors)', () => {
  it('writes the event and its sequence as one JSON line', () => {
    const line = jsonLine(event, 7).toString('utf8');
    expect(line.endsWith('\n')).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual({ sequence: 7, ...event });
  });

  it('frames the JSON with its UTF-8 length and CRC32C', () => {
    const frame = framedJson(event, 3);
    const length = frame.readUInt32LE(0);
    const payload = frame.subarray(8);
    expect(length).toBe(payload.length);
    expect(frame.readUInt32LE(4)).toBe(crc32c(payload) >>> 0);
    expect(JSON.parse(payload.toString('utf8'))).toEqual({ sequence: 3, ...event });
  });
});
