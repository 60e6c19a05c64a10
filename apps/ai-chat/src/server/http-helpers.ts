import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  InvalidIdError,
  InvalidInputError,
  KeepsakeError,
  SessionBusyError,
  ShrinkRefusedError,
} from '@keepsake/core';

const BODY_LIMIT_BYTES = 1024 * 1024;

/** A request error with its status, for bad input the handlers find themselves. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT_BYTES) throw new HttpError(413, 'The body is larger than 1 MiB');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'The body is not JSON');
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

/** Keepsake's typed errors as statuses: bad input 400, busy 409, the rest 500. */
export function sendError(response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const status =
    error instanceof HttpError
      ? error.status
      : InvalidIdError.isInstance(error) || InvalidInputError.isInstance(error)
        ? 400
        : SessionBusyError.isInstance(error) || ShrinkRefusedError.isInstance(error)
          ? 409
          : 500;
  const code = KeepsakeError.isInstance(error)
    ? error.code
    : status === 500
      ? 'internal'
      : 'bad_request';
  const message = status === 500 ? 'The server failed; see its log.' : (error as Error).message;
  if (status === 500) console.error(error);
  sendJson(response, status, { error: { code, message } });
}
