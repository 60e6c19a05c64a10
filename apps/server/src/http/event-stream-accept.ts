import type { FastifyRequest } from 'fastify';
import { ClientRequestError, quoteInput } from './client-errors.js';

/**
 * Whether an `Accept` header admits `text/event-stream` (RFC 9110 §12.5.1): the most
 * specific matching range wins, and `q=0` refuses. A missing header admits anything.
 * The same rule as @fastify/sse's `sse: 'only'` gate, checked first so the refusal gets
 * the server's error shape instead of the plugin's.
 */
export function acceptsEventStream(header: string | undefined): boolean {
  if (header === undefined || header.trim() === '') return true;
  let bestSpecificity = 0;
  let bestRefused = true;
  for (const range of header.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const specificity =
      type === 'text/event-stream' ? 3 : type === 'text/*' ? 2 : type === '*/*' ? 1 : 0;
    if (specificity === 0 || specificity < bestSpecificity) continue;
    const quality = parameters.find((parameter) => parameter.startsWith('q='));
    const refused = quality !== undefined && Number(quality.slice(2)) === 0;
    if (specificity > bestSpecificity || !refused) {
      bestSpecificity = specificity;
      bestRefused = refused;
    }
  }
  return bestSpecificity > 0 && !bestRefused;
}

/** A preHandler for SSE routes: 406 in the server's error shape when SSE is refused. */
export async function requireEventStream(request: FastifyRequest): Promise<void> {
  if (!acceptsEventStream(request.headers.accept)) {
    throw new ClientRequestError(
      406,
      'not_acceptable',
      `This URL streams events as text/event-stream, which the Accept header (${quoteInput(request.headers.accept ?? '')}) refuses; send "Accept: text/event-stream"`,
    );
  }
}
