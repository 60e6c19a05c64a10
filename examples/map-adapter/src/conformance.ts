import type { ConformanceInitializer } from '@keepsake/conformance';
import type { KeyValueMap } from './key-value-map.js';
import { mapAdapter } from './map-adapter.js';

/** One map per namespace: two adapters of a namespace share data, as the suite requires. */
const mapsByNamespace = new Map<string, KeyValueMap>();

/**
 * How `@keepsake/conformance` gets adapters of this package. A restart in the suite is a new
 * adapter over the same namespace's map; there is no `simulateCrash`, because with `process`
 * durability a machine crash loses everything and no clause asks for more than that.
 */
export const mapAdapterConformance: ConformanceInitializer = {
  name: 'example-map',
  async createAdapter(namespace) {
    let map = mapsByNamespace.get(namespace);
    if (map === undefined) {
      map = new Map();
      mapsByNamespace.set(namespace, map);
    }
    return mapAdapter({ map });
  },
  async teardown() {
    mapsByNamespace.clear();
  },
};
