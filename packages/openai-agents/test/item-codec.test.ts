import type { AgentInputItem } from '@openai/agents-core';
import { describe, expect, it } from 'vitest';
import { decodeItem, encodeItem } from '../src/index.js';

/** The round trip through what a store keeps: encoded, JSON text, parsed, decoded. */
function roundTrip(item: AgentInputItem): AgentInputItem {
  return decodeItem(JSON.parse(JSON.stringify(encodeItem(item, 'items[0]'))));
}

describe('item codec (issue 44: getItems gives back what addItems was given)', () => {
  it('keeps a key named __proto__ as a key, never as the prototype, both ways', () => {
    const item = JSON.parse(
      '{"type":"message","role":"user","content":"hi","providerData":{"__proto__":{"polluted":true},"$__proto__":1}}',
    ) as AgentInputItem;
    const back = roundTrip(item) as unknown as { providerData: Record<string, unknown> };
    expect(Object.keys(back.providerData)).toEqual(['__proto__', '$__proto__']);
    expect(Object.getPrototypeOf(back.providerData)).toBe(Object.prototype);
    expect((back.providerData as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(back.providerData, '__proto__')?.value).toEqual({
      polluted: true,
    });
    // The encoded form too: its __proto__ is an own key of a plain object.
    const encoded = encodeItem(item, 'items[0]') as { providerData: object };
    expect(Object.getPrototypeOf(encoded.providerData)).toBe(Object.prototype);
    expect(Object.keys(encoded.providerData)).toEqual(['__proto__', '$$__proto__']);
  });

  it('keeps key order, undefined properties, bytes and $-keys exactly', () => {
    const item = {
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'a' }],
      providerData: {
        z: 1,
        a: undefined,
        $bytes: 'not a tag',
        data: new Uint8Array([0, 1, 255]),
        list: [undefined, { $undefined: true }],
      },
    } as unknown as AgentInputItem;
    const back = roundTrip(item);
    expect(back).toStrictEqual(item);
    expect(Object.keys((back as { providerData: object }).providerData)).toEqual([
      'z',
      'a',
      '$bytes',
      'data',
      'list',
    ]);
  });

  it('gives fresh objects: changing what getItems returned changes nothing stored', () => {
    const stored = JSON.parse(
      JSON.stringify(encodeItem({ type: 'message', role: 'user', content: 'x' }, 'items[0]')),
    );
    const first = decodeItem(stored) as { content: string };
    first.content = 'changed';
    expect((decodeItem(stored) as { content: string }).content).toBe('x');
  });
});
