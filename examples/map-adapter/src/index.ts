export type { KeyValueMap } from './key-value-map.js';
export { type MapAdapterOptions, mapAdapter, mapAdapterCapabilities } from './map-adapter.js';
