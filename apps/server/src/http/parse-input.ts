import { InvalidInputError } from '@keepsake/core';
import type { z } from 'zod';

/**
 * Validates request input with zod. A failure is an `InvalidInputError` (→ 400) whose message
 * names every offending field, so bad input never reaches the store and never becomes a 500.
 */
export function parseInput<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  where: 'body' | 'query' | 'path' | 'header',
): z.infer<Schema> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.join('.') : where;
    return `${field}: ${issue.message}`;
  });
  throw new InvalidInputError(`Invalid request ${where}: ${problems.join('; ')}`, {
    cause: result.error,
  });
}
