import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../src/backoff.js';
import { classify } from '../src/errors.js';
import { KeyLayout } from '../src/keys.js';
import { decodeSegment, encodeSegment } from '../src/segment-format.js';
import {
  carriedSummary,
  encodeSummary,
  etagKeyPart,
  SUMMARY_METADATA,
  SUMMARY_METADATA_LIMIT,
  summaryMetadata,
} from '../src/summary-metadata.js';

describe('key layout', () => {
  const keys = new KeyLayout('app/tenant');

  it('keeps case-distinct ids apart and sorts segments and index entries numerically (A1)', () => {
    expect(keys.document('sessions', 'Chat-A')).not.toBe(keys.document('sessions', 'chat-a'));
    expect(keys.document('revisions', 's1.3')).toBe('app/tenant/doc/revisions/s1.3');
    const segments = [1, 9, 10, 100].map((sequence) => keys.segment('s', 'r', sequence));
    expect([...segments].sort()).toEqual(segments);
    expect(keys.segmentFirstSequence(keys.journal('s', 'r'), segments[2]!)).toBe(10);
    expect(keys.segmentFirstSequence(keys.journal('s', 'r'), `${keys.journal('s', 'r')}x`)).toBe(
      null,
    );
    expect(keys.parseIndexEntry(keys.indexEntry('my-session', 1_700_000_000_123, null))).toEqual({
      sessionId: 'my-session',
      updatedAt: 1_700_000_000_123,
      etag: null,
    });
    // B7: an entry names the document version it summarizes by its ETag.
    const etag = etagKeyPart('"0123456789abcdef0123456789abcdef"');
    expect(etag).toBe('0123456789abcdef0123456789abcdef');
    expect(keys.parseIndexEntry(keys.indexEntry('s', 5, etag))).toEqual({
      sessionId: 's',
      updatedAt: 5,
      etag,
    });
    // An ETag of another shape is hashed into the key's alphabet, never used as it is.
    expect(etagKeyPart('"W/a b/c"')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The marker is listed with the entries but is never taken for one.
    expect(keys.indexPresent.startsWith(keys.indexEntries)).toBe(true);
    expect(keys.parseIndexEntry(keys.indexPresent)).toBeNull();
    // One session's entries are never listed under another id that extends it.
    expect(keys.indexEntry('ab', 1, null).startsWith(keys.indexEntriesOf('a'))).toBe(false);
  });
});

describe('summary metadata (B7)', () => {
  const summary = {
    id: 's1',
    title: 'Ünïcode 💡 title',
    createdAt: 1,
    updatedAt: 1_700_000_000_123,
    messageCount: 3,
    pending: false,
    parentId: null,
    rotatedTo: null,
  };

  it('round-trips a summary through ASCII metadata', () => {
    const carried = encodeSummary(summary);
    expect(carried.partial).toBe(false);
    expect(carried.encoded).toMatch(/^[A-Za-z0-9_-]+$/);
    const read = carriedSummary(summaryMetadata(carried));
    expect(read?.updatedAt).toBe(summary.updatedAt);
    expect(read?.partial).toBe(false);
    expect(JSON.parse(read!.text)).toEqual(summary);
  });

  it('shortens the title of a summary too long for S3 metadata, whole code points only, and says so', () => {
    const long = { ...summary, title: `a${'💡'.repeat(SUMMARY_METADATA_LIMIT)}` };
    const carried = encodeSummary(long);
    expect(carried.partial).toBe(true);
    expect(carried.encoded.length).toBeLessThanOrEqual(SUMMARY_METADATA_LIMIT);
    const read = carriedSummary(summaryMetadata(carried));
    expect(read?.partial).toBe(true);
    const shortened = JSON.parse(read!.text) as typeof long;
    expect(long.title.startsWith(shortened.title)).toBe(true);
    expect(shortened.title.length).toBeGreaterThan(100);
    expect(shortened.title).not.toContain('\uFFFD');
    expect({ ...shortened, title: long.title }).toEqual(long);
  });

  it('reads no summary from metadata that is missing, not base64url, not JSON or has no updatedAt', () => {
    const encode = (text: string) => Buffer.from(text).toString('base64url');
    expect(carriedSummary({})).toBeNull();
    expect(carriedSummary({ [SUMMARY_METADATA]: 'not base64url!' })).toBeNull();
    expect(carriedSummary({ [SUMMARY_METADATA]: encode('{"id":') })).toBeNull();
    expect(carriedSummary({ [SUMMARY_METADATA]: encode('{"id":"s"}') })).toBeNull();
    expect(carriedSummary({ [SUMMARY_METADATA]: encode('{"updatedAt":-1}') })).toBeNull();
  });
});

describe('segment format', () => {
  it('round-trips any text, a newline or multi-byte characters included', () => {
    const records = [
      { sequence: 7, text: '{"a":1}' },
      { sequence: 8, text: 'line\nbreak é 💡' },
      { sequence: 9, text: '' },
    ];
    const decoded = decodeSegment(encodeSegment(records), 7);
    expect(decoded).toEqual({ ok: true, last: 9, records });
  });

  it('reports damage instead of reading fewer records (E3)', () => {
    const body = encodeSegment([
      { sequence: 1, text: '{"a":1}' },
      { sequence: 2, text: '{"b":2}' },
    ]);
    expect(decodeSegment(body.slice(0, -3), 1).ok).toBe(false);
    expect(decodeSegment(`${body}extra`, 1).ok).toBe(false);
    expect(decodeSegment(body, 2).ok).toBe(false);
    expect(decodeSegment('not a segment', 1).ok).toBe(false);
    expect(decodeSegment('', 1).ok).toBe(false);
  });
});

describe('failure classification', () => {
  const sdkError = (name: string, status: number) =>
    Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });

  it('tells conflicts, missing keys, transient and permanent failures apart', () => {
    expect(classify(sdkError('PreconditionFailed', 412))).toEqual({ kind: 'precondition' });
    expect(classify(sdkError('NoSuchKey', 404))).toEqual({ kind: 'missing' });
    expect(classify(sdkError('NotFound', 404))).toEqual({ kind: 'missing' });
    for (const [name, status] of [
      ['InternalError', 500],
      ['ServiceUnavailable', 503],
      ['SlowDown', 503],
      ['ConditionalRequestConflict', 409],
      ['TooManyRequests', 429],
    ] as const) {
      expect(classify(sdkError(name, status)), name).toEqual({ kind: 'transient', sent: true });
    }
    expect(classify(sdkError('AccessDenied', 403))).toEqual({ kind: 'permanent' });
    expect(classify(sdkError('NoSuchBucket', 400))).toEqual({ kind: 'permanent' });
    const refused = Object.assign(new Error('connect'), { code: 'ECONNREFUSED' });
    expect(classify(refused)).toEqual({ kind: 'transient', sent: false });
    const reset = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    expect(classify(reset)).toEqual({ kind: 'transient', sent: true });
    const aborted = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(classify(aborted)).toEqual({ kind: 'transient', sent: true });
  });

  it('backs off exponentially with full jitter, capped', () => {
    const policy = { attempts: 5, baseDelayMs: 50, maxDelayMs: 300 };
    expect(backoffDelay(policy, 0, () => 0.999)).toBe(49);
    expect(backoffDelay(policy, 2, () => 0.999)).toBe(199);
    expect(backoffDelay(policy, 6, () => 0.999)).toBe(299);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
  });
});
