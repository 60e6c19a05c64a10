/**
 * Test helpers for code that runs on `@keepsake/s3`: a throwaway Ceph cluster with a RADOS
 * Gateway started on loopback (stopped by pid), and the choice between an endpoint named by
 * KEEPSAKE_TEST_S3_ENDPOINT, testcontainers' MinIO and the local Ceph binaries.
 */
export { CephCluster, type CephClusterOptions, type S3TestCredentials } from './ceph-cluster.js';
export { freePort } from './free-port.js';
export {
  chooseS3Target,
  containerEngineAvailable,
  endpointTarget,
  type S3Target,
  type S3TargetEnvironment,
  type S3TargetKind,
  startS3Target,
  testClientConfig,
} from './s3-target.js';
