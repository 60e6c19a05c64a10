import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | undefined;

/**
 * Runs a full garbage collection, so a test can tell "the application no longer holds this
 * session object" (C4: the store's weak reference to an evicted session lets go) from
 * "it still does". V8 exposes `gc` to contexts created after the flag is set, which works
 * in any test runner without starting Node with --expose-gc. WeakRef targets stay alive
 * until the current job ends, so callers await this before checking.
 */
export async function collectGarbage(): Promise<void> {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  // Let the job that last touched the objects end first (WeakRef's keep-during-job rule).
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  await new Promise((resolve) => setImmediate(resolve));
}
