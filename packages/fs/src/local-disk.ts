/**
 * Filesystem types (statfs(2) `f_type`, Linux's magic numbers) whose files live on a disk of
 * this machine. Only there does the adapter make synchronous calls on its hot paths, and keep
 * a document's delta file open between saves: on NFS, SMB, FUSE (rclone, sshfs), 9p or
 * virtiofs a `stat` may wait for a server, or first write back the file's dirty pages, and
 * would hold up the event loop meanwhile; and what is written reaches the server when the
 * file is closed or flushed, so readers on other hosts would see it late. A type missing here
 * only costs speed, never correctness.
 */
const LOCAL_FILESYSTEM_TYPES: ReadonlySet<number> = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
  0xca451a4e, // bcachefs
  0x794c7630, // overlayfs (containers; its layers are local)
  0x52654973, // reiserfs
  0x3153464a, // jfs
]);

export function isLocalFileSystemType(type: number | bigint): boolean {
  return LOCAL_FILESYSTEM_TYPES.has(Number(type));
}
