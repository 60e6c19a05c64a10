import {
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';
import { ReadOnlyError } from '@keepsake/core';
import type { S3Requests } from './requests.js';

/** The only requests a read-only adapter sends. */
const READS = [GetObjectCommand, HeadObjectCommand, HeadBucketCommand, ListObjectsV2Command];

/**
 * `readOnly: true`, at the lowest layer: every request goes through `send`, and any command
 * but a GET, a HEAD or a LIST rejects with `ReadOnlyError` before it is sent. The adapter's
 * write primitives are refused before they get this far (read-only.ts); this also stops the
 * housekeeping a read does on a writing adapter (a listing rewrites an index entry for a
 * session saved without one and removes superseded ones), which tolerates the refusal as it
 * tolerates any failure of it.
 */
export function readOnlyRequests(requests: S3Requests): S3Requests {
  const send = requests.send.bind(requests);
  requests.send = <Output>(command: Parameters<S3Requests['send']>[0]): Promise<Output> => {
    if (!READS.some((read) => command instanceof read)) {
      const name = (command as object).constructor.name.replace(/Command$/, '');
      return Promise.reject(new ReadOnlyError('The s3 adapter', `send ${name}`));
    }
    return send<Output>(command);
  };
  return requests;
}
