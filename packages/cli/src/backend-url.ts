import { isAbsolute, resolve } from 'node:path';
import { BadBackendUrlError } from './cli-errors.js';

/**
 * Where a store lives, as the operator wrote it on the command line. Parsing is strict, like
 * every option in Keepsake: an unknown query option or a malformed value is refused with the
 * reason, never ignored, so a typo cannot point a migration at the wrong place.
 */
export type BackendSpec = FsBackendSpec | RedisBackendSpec | S3BackendSpec;

export interface FsBackendSpec {
  readonly scheme: 'fs';
  /** Absolute path of the store's root directory. */
  readonly directory: string;
  /** How the backend is named in messages. */
  readonly display: string;
}

export interface RedisBackendSpec {
  readonly scheme: 'redis';
  /** The connection URL handed to ioredis, without the CLI's query options. */
  readonly connectionUrl: string;
  readonly keyPrefix: string;
  /** Given in the URL; otherwise chosen by the role (see `open-backend.ts`). */
  readonly durability: 'none' | 'aof' | 'replicas' | null;
  readonly replicas: number | null;
  readonly connectTimeoutMs: number;
  /** The URL with its password masked. */
  readonly display: string;
}

export interface S3BackendSpec {
  readonly scheme: 's3';
  readonly bucket: string;
  /** Key prefix inside the bucket, without leading or trailing slashes ('' for none). */
  readonly prefix: string;
  readonly endpoint: string | null;
  readonly region: string | null;
  /** Null: the adapter's default (path-style with an endpoint, virtual-hosted without). */
  readonly forcePathStyle: boolean | null;
  readonly compatibility: 'standard' | 'ceph-rgw';
  readonly display: string;
}

/** @default how long the CLI waits for a Redis server to answer before calling it unreachable */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/**
 * Parses `fs:///path`, a plain path (relative to `cwd`), `redis://…`, `rediss://…` or
 * `s3://bucket/prefix?endpoint=…`.
 */
export function parseBackendUrl(text: string, cwd: string): BackendSpec {
  if (text.trim() === '') throw new BadBackendUrlError(text, 'it is empty');
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    const directory = resolve(cwd, text);
    return { scheme: 'fs', directory, display: directory };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new BadBackendUrlError(text, 'it is not a valid URL', { cause: error });
  }
  switch (scheme) {
    case 'fs':
      return parseFsUrl(text, url);
    case 'redis':
    case 'rediss':
      return parseRedisUrl(text, url);
    case 's3':
      return parseS3Url(text, url);
    default:
      throw new BadBackendUrlError(
        text,
        `unknown scheme "${scheme}://"; use fs:///path (or a plain path), redis://host:port or s3://bucket/prefix`,
      );
  }
}

function parseFsUrl(text: string, url: URL): FsBackendSpec {
  if (url.hostname !== '' && url.hostname !== 'localhost') {
    throw new BadBackendUrlError(
      text,
      `"${url.hostname}" would be a host; an fs URL is fs:///absolute/path (three slashes), and a relative path is given without a scheme`,
    );
  }
  rejectOptions(text, url, []);
  const directory = decodeURIComponent(url.pathname);
  if (!isAbsolute(directory) || directory === '/') {
    throw new BadBackendUrlError(text, 'an fs URL needs an absolute path below /');
  }
  return { scheme: 'fs', directory, display: directory };
}

function parseRedisUrl(text: string, url: URL): RedisBackendSpec {
  rejectOptions(text, url, ['prefix', 'durability', 'replicas', 'connectTimeoutMs']);
  if (url.hostname === '') throw new BadBackendUrlError(text, 'it names no host');
  if (!/^\/?(\d{1,2})?$/.test(url.pathname)) {
    throw new BadBackendUrlError(text, `the path "${url.pathname}" is not a database number`);
  }
  const keyPrefix = url.searchParams.get('prefix') ?? 'keepsake';
  if (!/^[^{}\s]{1,200}$/.test(keyPrefix)) {
    throw new BadBackendUrlError(
      text,
      '`prefix` must be 1 to 200 characters without braces or whitespace',
    );
  }
  const durabilityText = url.searchParams.get('durability');
  if (durabilityText !== null && !['none', 'aof', 'replicas'].includes(durabilityText)) {
    throw new BadBackendUrlError(text, '`durability` must be none, aof or replicas');
  }
  const durability = durabilityText as RedisBackendSpec['durability'];
  const replicas = integerOption(text, url, 'replicas', 1, 64);
  if (replicas !== null && durability !== 'replicas') {
    throw new BadBackendUrlError(text, '`replicas` goes with durability=replicas');
  }
  const connection = new URL(url.href);
  connection.search = '';
  connection.hash = '';
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return {
    scheme: 'redis',
    connectionUrl: connection.href,
    keyPrefix,
    durability,
    replicas,
    connectTimeoutMs:
      integerOption(text, url, 'connectTimeoutMs', 100, 600_000) ?? DEFAULT_CONNECT_TIMEOUT_MS,
    display: shown.href,
  };
}

function parseS3Url(text: string, url: URL): S3BackendSpec {
  rejectOptions(text, url, ['endpoint', 'region', 'forcePathStyle', 'compatibility']);
  const bucket = url.hostname;
  // S3's bucket naming rules: 3-63 lower-case letters, digits, dots and hyphens.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new BadBackendUrlError(text, `"${bucket}" is not a valid S3 bucket name`);
  }
  const endpoint = url.searchParams.get('endpoint');
  if (endpoint !== null && !/^https?:\/\/[^\s/]+/.test(endpoint)) {
    throw new BadBackendUrlError(text, '`endpoint` must be an http:// or https:// URL');
  }
  const forcePathStyle = url.searchParams.get('forcePathStyle');
  if (forcePathStyle !== null && forcePathStyle !== 'true' && forcePathStyle !== 'false') {
    throw new BadBackendUrlError(text, '`forcePathStyle` must be true or false');
  }
  const compatibility = url.searchParams.get('compatibility') ?? 'standard';
  if (compatibility !== 'standard' && compatibility !== 'ceph-rgw') {
    throw new BadBackendUrlError(text, '`compatibility` must be standard or ceph-rgw');
  }
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  if (prefix !== '' && !/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/.test(prefix)) {
    throw new BadBackendUrlError(
      text,
      `the prefix "${prefix}" must be path segments of letters, digits, "_", "." and "-"`,
    );
  }
  return {
    scheme: 's3',
    bucket,
    prefix,
    endpoint,
    region: url.searchParams.get('region'),
    forcePathStyle: forcePathStyle === null ? null : forcePathStyle === 'true',
    compatibility,
    display: text,
  };
}

function rejectOptions(text: string, url: URL, known: readonly string[]): void {
  for (const name of new Set(url.searchParams.keys())) {
    if (!known.includes(name)) {
      const allowed = known.length === 0 ? 'this scheme takes none' : `known: ${known.join(', ')}`;
      throw new BadBackendUrlError(text, `unknown option "${name}" (${allowed})`);
    }
    if (url.searchParams.getAll(name).length > 1) {
      throw new BadBackendUrlError(text, `option "${name}" is given twice`);
    }
  }
  if (url.hash !== '') throw new BadBackendUrlError(text, 'a URL fragment (#…) means nothing here');
}

function integerOption(
  text: string,
  url: URL,
  name: string,
  minimum: number,
  maximum: number,
): number | null {
  const value = url.searchParams.get(name);
  if (value === null) return null;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < minimum || number > maximum) {
    throw new BadBackendUrlError(
      text,
      `\`${name}\` must be an integer from ${minimum} to ${maximum}`,
    );
  }
  return number;
}
