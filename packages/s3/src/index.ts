export type { ProbeReport } from './capability-probe.js';
export { ADAPTER_NAME, S3CapabilityError } from './errors.js';
export { KeyLayout } from './keys.js';
export type { S3AdapterOptions, S3Compatibility } from './options.js';
export { openS3Adapter, S3Adapter, s3Adapter, s3Capabilities } from './s3-adapter.js';
