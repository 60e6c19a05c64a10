import type { CarriedMetadata } from './summary-metadata.js';

/** ETags remembered at most; the oldest is forgotten first (it then costs one HEAD). */
const MAX_ENTRIES = 10_000;

export interface KnownVersion {
  readonly revision: number;
  readonly etag: string;
  /**
   * B7: the summary metadata this version carries, undefined for none: a save that does
   * not update the index (`skipIndex`) carries it over unchanged, so the document always
   * names its last indexed summary.
   */
  readonly summary: CarriedMetadata | undefined;
}

/**
 * B4, 1 request per save: the ETag of each document at the revision this adapter last read
 * or wrote. A save expecting that revision sends `If-Match: <etag>` at once, with no read
 * before it; a save expecting another revision (or a forgotten key) HEADs first.
 */
export class EtagCache {
  private readonly versions = new Map<string, KnownVersion>();

  get(key: string): KnownVersion | undefined {
    return this.versions.get(key);
  }

  remember(key: string, version: KnownVersion): void {
    this.versions.delete(key);
    this.versions.set(key, version);
    if (this.versions.size > MAX_ENTRIES) {
      const oldest = this.versions.keys().next().value;
      if (oldest !== undefined) this.versions.delete(oldest);
    }
  }

  forget(key: string): void {
    this.versions.delete(key);
  }
}
