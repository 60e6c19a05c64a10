import { existsSync } from 'node:fs';
import { CephCluster, type S3TestCredentials } from './ceph-cluster.js';

/**
 * Where an adapter test finds its S3 (house style: an environment variable reuses a running
 * server; otherwise the harness starts one):
 * - `endpoint`: KEEPSAKE_TEST_S3_ENDPOINT names an S3 endpoint to use as it is (AWS, R2,
 *   MinIO, an RGW), with KEEPSAKE_TEST_S3_ACCESS_KEY_ID, KEEPSAKE_TEST_S3_SECRET_ACCESS_KEY,
 *   KEEPSAKE_TEST_S3_BUCKET, and optionally KEEPSAKE_TEST_S3_REGION and
 *   KEEPSAKE_TEST_S3_COMPATIBILITY (`ceph-rgw` for an RGW 16);
 * - `testcontainers`: a container engine is present, so testcontainers' MinIO module
 *   starts one;
 * - `ceph`: the harness starts a single-node Ceph cluster with a RADOS Gateway from the
 *   local binaries (see CephCluster).
 */
export type S3TargetKind = 'endpoint' | 'testcontainers' | 'ceph';

export interface S3TargetEnvironment {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether a container engine answers here (a Docker socket exists, DOCKER_HOST is set). */
  readonly containerEngine: boolean;
}

export function chooseS3Target(environment: S3TargetEnvironment): S3TargetKind {
  const endpoint = environment.env.KEEPSAKE_TEST_S3_ENDPOINT;
  if (endpoint !== undefined && endpoint.trim() !== '') return 'endpoint';
  if (environment.containerEngine) return 'testcontainers';
  return 'ceph';
}

/** An S3 for one test file: how to reach it, and how to let go of it. */
export interface S3Target {
  readonly kind: S3TargetKind;
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: S3TestCredentials;
  /** A bucket the tests may use (created by the harness unless the endpoint was given). */
  readonly bucket: string;
  /** `ceph-rgw` on the harness's Ceph (its If-Match quirk), else what the environment says. */
  readonly compatibility: 'standard' | 'ceph-rgw';
  /** The Ceph cluster when the harness started it (crash tests need one). */
  readonly cluster: CephCluster | null;
  dispose(): Promise<void>;
}

/** Reads the KEEPSAKE_TEST_S3_* variables of an existing endpoint; names a missing one. */
export function endpointTarget(env: Readonly<Record<string, string | undefined>>): S3Target {
  const required = (name: string): string => {
    const value = env[name]?.trim();
    if (value === undefined || value === '') {
      throw new Error(`KEEPSAKE_TEST_S3_ENDPOINT is set, so ${name} must be set too`);
    }
    return value;
  };
  const compatibility = env.KEEPSAKE_TEST_S3_COMPATIBILITY?.trim() || 'standard';
  if (compatibility !== 'standard' && compatibility !== 'ceph-rgw') {
    throw new Error(
      `KEEPSAKE_TEST_S3_COMPATIBILITY must be "standard" or "ceph-rgw", not "${compatibility}"`,
    );
  }
  return {
    kind: 'endpoint',
    endpoint: required('KEEPSAKE_TEST_S3_ENDPOINT'),
    region: env.KEEPSAKE_TEST_S3_REGION?.trim() || 'us-east-1',
    credentials: {
      accessKeyId: required('KEEPSAKE_TEST_S3_ACCESS_KEY_ID'),
      secretAccessKey: required('KEEPSAKE_TEST_S3_SECRET_ACCESS_KEY'),
    },
    bucket: required('KEEPSAKE_TEST_S3_BUCKET'),
    compatibility,
    cluster: null,
    dispose: async () => undefined,
  };
}

/**
 * Starts (or names) the S3 a test file uses. The harness's own servers get a bucket
 * `keepsake-test`, created here. The testcontainers path loads `@testcontainers/minio` only
 * when chosen; it is not a dependency of this package.
 */
export async function startS3Target(environment: S3TargetEnvironment): Promise<S3Target> {
  const kind = chooseS3Target(environment);
  if (kind === 'endpoint') return endpointTarget(environment.env);
  const bucket = 'keepsake-test';
  if (kind === 'testcontainers') {
    const moduleName = '@testcontainers/minio';
    const { MinioContainer } = (await import(moduleName)) as {
      MinioContainer: new (
        image: string,
      ) => {
        start(): Promise<{
          getConnectionUrl(): string;
          getUsername(): string;
          getPassword(): string;
          stop(): Promise<unknown>;
        }>;
      };
    };
    const container = await new MinioContainer('minio/minio:latest').start();
    const target: S3Target = {
      kind,
      endpoint: container.getConnectionUrl(),
      region: 'us-east-1',
      credentials: {
        accessKeyId: container.getUsername(),
        secretAccessKey: container.getPassword(),
      },
      bucket,
      compatibility: 'standard',
      cluster: null,
      dispose: async () => {
        await container.stop();
      },
    };
    await createBucket(target);
    return target;
  }
  const cluster = await CephCluster.start();
  const target: S3Target = {
    kind,
    endpoint: cluster.endpoint,
    region: 'us-east-1',
    credentials: cluster.credentials,
    bucket,
    compatibility: 'ceph-rgw',
    cluster,
    dispose: () => cluster.dispose(),
  };
  try {
    await createBucket(target);
  } catch (error) {
    await cluster.dispose();
    throw error;
  }
  return target;
}

/** Creates the target's bucket (loaded lazily: the SDK is a peer dependency). */
async function createBucket(target: S3Target): Promise<void> {
  const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client(testClientConfig(target));
  try {
    await client.send(new CreateBucketCommand({ Bucket: target.bucket }));
  } finally {
    client.destroy();
  }
}

/**
 * S3Client settings for a test target: explicit credentials and region, so the SDK never
 * looks for credentials or a region anywhere else (no instance metadata requests).
 */
export function testClientConfig(target: Pick<S3Target, 'endpoint' | 'region' | 'credentials'>) {
  return {
    endpoint: target.endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: { ...target.credentials },
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
    maxAttempts: 1,
  };
}

/** Whether a container engine is reachable here: DOCKER_HOST, or a Docker socket on disk. */
export function containerEngineAvailable(
  env: Readonly<Record<string, string | undefined>> = process.env,
  socketExists: (path: string) => boolean = existsSync,
): boolean {
  if (env.DOCKER_HOST !== undefined && env.DOCKER_HOST !== '') return true;
  return socketExists('/var/run/docker.sock') || socketExists('/run/podman/podman.sock');
}
