/**
 * The conformance suite's initializer for its real second processes (H1's second process,
 * E2's randomized process kills): what `initializerModule` names in `conformance.test.ts`
 * and `conformance-cluster.test.ts`. The same key layout (`conformance:<namespace>`), on the
 * server or Cluster that file started, named in the environment the child inherits. It
 * imports the built package, so plain Node runs it (types stripped) without a bundler.
 */
import type * as RedisPackage from '../src/index.js';

/**
 * The built package, imported when an adapter is made: its name is a value, so typecheck
 * (which runs before the build) reads the types from the source instead.
 */
const PACKAGE = '@keepsake/redis';

export const TARGET_ENV = 'KEEPSAKE_REDIS_CONFORMANCE_TARGET';

/** What a child needs of the parent's Redis: a server's URL or a Cluster's seed nodes. */
export type ChildTarget =
  | { readonly url: string }
  | { readonly seeds: ReadonlyArray<{ readonly host: string; readonly port: number }> };

export function conformanceKeyPrefix(namespace: string): string {
  return `conformance:${namespace}`;
}

export default {
  name: 'redis',
  async createAdapter(namespace: string) {
    const text = process.env[TARGET_ENV];
    if (text === undefined) throw new TypeError(`${TARGET_ENV} is not set by the parent test`);
    const target = JSON.parse(text) as ChildTarget;
    const keyPrefix = conformanceKeyPrefix(namespace);
    const { redisAdapter } = (await import(PACKAGE)) as typeof RedisPackage;
    return 'url' in target
      ? redisAdapter({ url: target.url, keyPrefix })
      : redisAdapter({ clusterNodes: [...target.seeds], keyPrefix });
  },
};
