import { InvalidInputError } from '@keepsake/core';
import type { FastifyInstance } from 'fastify';
import { ClientRequestError } from './client-errors.js';

/**
 * The API's only body parser. Fastify's default parser refuses a `__proto__` key too, but
 * reports it as "not valid JSON", which it is not; this one says what is refused and why.
 * It also replaces Fastify's `text/plain` parser, so every other content type is a 415.
 */
export function installJsonBodyParser(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/** Parses a request body; throws a 400 that names the problem. */
export function parseJsonBody(text: string): unknown {
  if (text.trim().length === 0) {
    throw new ClientRequestError(
      400,
      'invalid_json',
      'The body is empty, but its content type is application/json: send a JSON object',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ClientRequestError(
      400,
      'invalid_json',
      `The body is not valid JSON (${(error as Error).message})`,
    );
  }
  const forbidden = findPrototypeKey(value);
  if (forbidden !== null) {
    throw new InvalidInputError(
      `Invalid request body: the key ${forbidden} is refused, because a key that reaches an object's prototype could change every object built from this body; rename it`,
      { path: forbidden },
    );
  }
  return value;
}

/**
 * The path of the first `__proto__` key, or `constructor` key holding a `prototype`
 * (what secure-json-parse refuses), or null. JSON.parse itself makes them plain own
 * properties; the danger is in code that later merges or assigns them.
 */
function findPrototypeKey(root: unknown): string | null {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: 'body' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      const childPath = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
      if (key === '__proto__') return childPath;
      if (
        key === 'constructor' &&
        typeof child === 'object' &&
        child !== null &&
        Object.hasOwn(child, 'prototype')
      ) {
        return `${childPath}.prototype`;
      }
      stack.push({ value: child, path: childPath });
    }
  }
  return null;
}
