export {
  type SqliteAdapterOptions,
  sqliteAdapter,
  sqliteAdapterCapabilities,
} from './sqlite-adapter.js';
