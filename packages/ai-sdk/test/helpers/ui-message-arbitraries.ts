import type { UIMessage } from 'ai';
import fc from 'fast-check';

/**
 * UI messages with every part type the AI SDK defines, each in every state, with only the
 * fields its `validateUIMessages` schema knows (it strips the others, so the round trip
 * could not be compared through it otherwise). Values are JSON: what `useChat` sends.
 */

const key = fc.string({ maxLength: 8 }).filter((text) => text !== '__proto__');

const jsonLeaf = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((value) => !Object.is(value, -0)),
  fc.boolean(),
  fc.constant(null),
);

export const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    jsonLeaf,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 3 }),
  ),
})).value;

const jsonObject = fc.dictionary(key, jsonValue, { maxKeys: 3 });
const providerMetadata = fc.dictionary(fc.constantFrom('openai', 'anthropic', 'x'), jsonObject, {
  maxKeys: 2,
});
const text = fc.string({ unit: 'binary', maxLength: 40 });
const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/);
const state = fc.constantFrom('streaming' as const, 'done' as const);

/** Optional fields: present with a value, or absent (never `undefined`). */
function withOptional<T extends object>(
  required: fc.Arbitrary<T>,
  optional: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<T> {
  return fc
    .tuple(required, fc.record(optional, { requiredKeys: [] }))
    .map(([base, extra]) => ({ ...base, ...extra }));
}

const textPart = withOptional(fc.record({ type: fc.constant('text'), text }), {
  state,
  providerMetadata,
});
const reasoningPart = withOptional(fc.record({ type: fc.constant('reasoning'), text }), {
  id: name,
  state,
  providerMetadata,
});
const customPart = withOptional(
  fc.record({
    type: fc.constant('custom'),
    kind: fc.tuple(name, name).map(([a, b]) => `${a}.${b}`),
  }),
  { providerMetadata },
);
const sourceUrlPart = withOptional(
  fc.record({ type: fc.constant('source-url'), sourceId: name, url: fc.webUrl() }),
  { title: text, providerMetadata },
);
const sourceDocumentPart = withOptional(
  fc.record({
    type: fc.constant('source-document'),
    sourceId: name,
    mediaType: fc.constantFrom('application/pdf', 'text/plain'),
    title: text,
  }),
  { filename: name, providerMetadata },
);
const dataUrl = fc
  .uint8Array({ maxLength: 24 })
  .map((bytes) => `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`);
const filePart = withOptional(
  fc.record({
    type: fc.constant('file'),
    mediaType: fc.constantFrom('image/png', 'image', 'application/pdf'),
    url: fc.oneof(dataUrl, fc.webUrl()),
  }),
  {
    filename: name,
    providerReference: fc.dictionary(name, name, { maxKeys: 2 }),
    providerMetadata,
  },
);
const reasoningFilePart = withOptional(
  fc.record({
    type: fc.constant('reasoning-file'),
    mediaType: fc.constant('image/png'),
    url: dataUrl,
  }),
  { providerMetadata },
);
const stepStartPart = fc.constant({ type: 'step-start' });
const dataPart = withOptional(
  fc.record({ type: name.map((dataName) => `data-${dataName}`), data: jsonValue }),
  { id: name },
);
const steeringPart = fc.record({
  type: fc.constant('steering-message'),
  id: name,
  parts: fc.array(
    textPart.map(({ type, text: value }) => ({ type, text: value })),
    {
      minLength: 1,
      maxLength: 2,
    },
  ),
});

const approvalBase = { id: name };
/** A tool invocation in each of its states, with the fields each state allows. */
const toolInvocation = fc.oneof(
  withOptional(fc.record({ state: fc.constant('input-streaming') }), {
    input: jsonValue,
    rawInput: text,
    inputEncoding: fc.constantFrom('json', 'text'),
    callProviderMetadata: providerMetadata,
  }),
  withOptional(fc.record({ state: fc.constant('input-available'), input: jsonValue }), {
    callProviderMetadata: providerMetadata,
  }),
  fc.record({
    state: fc.constant('approval-requested'),
    input: jsonValue,
    approval: withOptional(fc.record(approvalBase), {
      requestReason: text,
      isAutomatic: fc.boolean(),
      signature: name,
    }),
  }),
  fc.record({
    state: fc.constant('approval-responded'),
    input: jsonValue,
    approval: withOptional(fc.record({ ...approvalBase, approved: fc.boolean() }), {
      reason: text,
    }),
  }),
  withOptional(
    fc.record({ state: fc.constant('output-available'), input: jsonValue, output: jsonValue }),
    {
      preliminary: fc.boolean(),
      resultProviderMetadata: providerMetadata,
      approval: fc.record({ ...approvalBase, approved: fc.constant(true) }),
    },
  ),
  withOptional(fc.record({ state: fc.constant('output-error'), errorText: text }), {
    input: jsonValue,
    approval: fc.record({ ...approvalBase, approved: fc.constant(true) }),
  }),
  fc.record({
    state: fc.constant('output-denied'),
    input: jsonValue,
    approval: withOptional(fc.record({ ...approvalBase, approved: fc.constant(false) }), {
      reason: text,
    }),
  }),
);
const toolCommon = { toolCallId: name };
const toolOptional = { title: text, toolMetadata: jsonObject, providerExecuted: fc.boolean() };
const staticToolPart = fc
  .tuple(name, toolInvocation, withOptional(fc.record(toolCommon), toolOptional))
  .map(([toolName, invocation, common]) => ({
    type: `tool-${toolName}`,
    ...common,
    ...invocation,
  }));
const dynamicToolPart = fc
  .tuple(name, toolInvocation, withOptional(fc.record(toolCommon), toolOptional))
  .map(([toolName, invocation, common]) => ({
    type: 'dynamic-tool',
    toolName,
    ...common,
    ...invocation,
  }));

export const uiPart = fc.oneof(
  textPart,
  reasoningPart,
  customPart,
  sourceUrlPart,
  sourceDocumentPart,
  filePart,
  reasoningFilePart,
  stepStartPart,
  dataPart,
  steeringPart,
  staticToolPart,
  dynamicToolPart,
);

/** Any string the AI SDK allows as an id: short ones, Unicode, ones that need encoding. */
export const anyId = fc
  .oneof(
    fc.stringMatching(/^[A-Za-z0-9]{16}$/),
    fc.uuid(),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
  )
  .filter((id) => (id as string & { isWellFormed(): boolean }).isWellFormed());

const message = fc
  .record({
    id: anyId,
    role: fc.constantFrom('user' as const, 'assistant' as const, 'system' as const),
    parts: fc.array(uiPart, { maxLength: 6 }),
  })
  .chain((base) =>
    withOptional(fc.constant(base), { metadata: jsonValue }).map((withMetadata) =>
      // A user or system message has at least one part (validateUIMessages requires it).
      withMetadata.role !== 'assistant' && withMetadata.parts.length === 0
        ? { ...withMetadata, parts: [{ type: 'text', text: 'hi' }] }
        : withMetadata,
    ),
  );

/** A chat: 1 to 6 messages with distinct ids. */
export const uiMessages: fc.Arbitrary<UIMessage[]> = fc
  .uniqueArray(message, { minLength: 1, maxLength: 6, selector: (item) => item.id })
  .map((messages) => JSON.parse(JSON.stringify(messages)) as UIMessage[]);
