import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { RedisTarget } from '@keepsake/redis/testing';
import { type S3Target, testClientConfig } from '@keepsake/s3/testing';
import { Redis } from 'ioredis';

/**
 * Every entry under `root`: its path, kind, size, mtime and the SHA-256 of its bytes (a
 * symbolic link, as fs locks are: its target). Reading changes none of these; creating,
 * writing, renaming, truncating or removing anything changes at least one (a directory's
 * mtime moves with its entries).
 */
export async function treeSnapshot(root: string): Promise<string[]> {
  const lines: string[] = [];
  const visit = async (path: string, relative: string) => {
    const stats = await lstat(path);
    const kind = stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'link' : 'file';
    let content = '';
    if (kind === 'file')
      content = createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
    if (kind === 'link') content = await readlink(path);
    lines.push(`${relative} ${kind} ${stats.size} ${stats.mtimeMs} ${content}`);
    if (kind !== 'dir') return;
    for (const name of (await readdir(path)).sort()) {
      await visit(join(path, name), `${relative}/${name}`);
    }
  };
  await visit(root, '.');
  return lines;
}

/** Every key under the prefix with the SHA-256 of its DUMP (type, value, encoding) and TTL. */
export async function keyspaceSnapshot(target: RedisTarget, prefix: string): Promise<string[]> {
  const client = new Redis(target.url);
  try {
    const keys = new Set<string>();
    let cursor = '0';
    do {
      const [next, found] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
      for (const key of found) keys.add(key);
      cursor = next;
    } while (cursor !== '0');
    const lines: string[] = [];
    for (const key of [...keys].sort()) {
      const dump = await client.dumpBuffer(key);
      const digest = dump === null ? 'gone' : createHash('sha256').update(dump).digest('hex');
      lines.push(`${key} ${digest} ${await client.pttl(key)}`);
    }
    return lines;
  } finally {
    client.disconnect();
  }
}

/** Every object under the prefix (the whole bucket: `''`) with its ETag, size and time. */
export async function bucketSnapshot(target: S3Target, prefix: string): Promise<string[]> {
  const client = new S3Client(testClientConfig(target));
  try {
    const lines: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: target.bucket,
          Prefix: prefix,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
      );
      for (const object of page.Contents ?? []) {
        lines.push(
          `${object.Key} ${object.ETag} ${object.Size} ${object.LastModified?.toISOString()}`,
        );
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return lines.sort();
  } finally {
    client.destroy();
  }
}
