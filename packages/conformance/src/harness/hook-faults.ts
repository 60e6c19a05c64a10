import { NotFoundError } from '@keepsake/core';

/**
 * Issue 24: an initializer whose `releaseAdapter` (formerly `destroyAdapter`) wipes the
 * namespace makes every restart test fail with "No session with id …", which points at
 * the adapter. When a test released an adapter before it went on and then met a
 * NotFoundError, the failure names the hook as the likely cause.
 */
export function explainLikelyHookFault(
  env: { readonly releasedBeforeTheEnd: boolean },
  error: unknown,
): unknown {
  if (!env.releasedBeforeTheEnd || !NotFoundError.isInstance(error)) return error;
  error.message +=
    ' — this test released an adapter (releaseAdapter, formerly destroyAdapter) and reopened the namespace: if that hook removes data, it is the cause. Release only the adapter there; remove data in destroyNamespace.';
  return error;
}
