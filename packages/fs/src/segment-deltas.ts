import { decodeFrames, encodeFrame, FRAME_HEADER_BYTES } from './framing.js';
import { type Delta, decodeDelta, encodeDelta } from './records.js';

export interface DeltaWrite {
  readonly revision: number;
  readonly text: string;
}

/** The frames that append `deltas` to the base with `nonce`, as one buffer (one write). */
export function encodeDeltaFrames(nonce: string, deltas: ReadonlyArray<DeltaWrite>): Buffer {
  return Buffer.concat(
    deltas.map((delta) => encodeFrame(encodeDelta(nonce, delta.revision, delta.text))),
  );
}

/** The deltas of one base in a delta file; `fresh` when the file holds nothing else. */
export function deltasOf(
  bytes: Uint8Array,
  nonce: string,
  baseRevision: number,
): { deltas: Delta[]; validLength: number; torn: boolean; fresh: boolean } {
  const frames = decodeFrames(bytes);
  const deltas: Delta[] = [];
  let revision = baseRevision;
  let offset = 0;
  for (const payload of frames.payloads) {
    const delta = decodeDelta(payload);
    if (delta === null || delta.nonce !== nonce || delta.revision < revision) {
      // A file left by a replaced base: none of it applies, and the next write replaces it.
      if (deltas.length === 0) {
        return { deltas, validLength: frames.validLength, torn: frames.torn, fresh: false };
      }
      // Never written that way; if it were, keep what applies and treat the rest as torn.
      return { deltas, validLength: offset, torn: true, fresh: true };
    }
    deltas.push(delta);
    revision = delta.revision;
    offset += FRAME_HEADER_BYTES + payload.length;
  }
  return { deltas, validLength: frames.validLength, torn: frames.torn, fresh: true };
}
