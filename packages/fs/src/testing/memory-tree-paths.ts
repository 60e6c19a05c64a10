import { posix } from 'node:path';
import { fileSystemError } from './file-system-calls.js';
import type { DirectoryNode, Node, SymlinkNode } from './strict-memory-tree.js';

// From a path to a node of the strict memory tree, failing the way a filesystem call would.

export function partsOf(path: string): string[] {
  return posix.resolve('/', path.replaceAll('\\', '/')).split('/').filter(Boolean);
}

export function lookup(root: DirectoryNode, path: string): Node | null {
  let node: Node = root;
  for (const part of partsOf(path)) {
    if (node.kind !== 'directory') return null;
    const child: Node | undefined = node.entries.get(part);
    if (!child) return null;
    node = child;
  }
  return node;
}

export function resolveNode(root: DirectoryNode, path: string, operation: string): Node {
  const node = lookup(root, path);
  if (!node) throw fileSystemError('ENOENT', operation, path);
  return node;
}

export function parentOf(
  root: DirectoryNode,
  path: string,
  operation: string,
): { parent: DirectoryNode; name: string } {
  const parts = partsOf(path);
  const name = parts.pop();
  const parent = lookup(root, `/${parts.join('/')}`);
  if (!name || !parent) throw fileSystemError('ENOENT', operation, path);
  if (parent.kind !== 'directory') throw fileSystemError('ENOTDIR', operation, path);
  return { parent, name };
}

/** The node at `path`, through a final symbolic link. */
export function followed(root: DirectoryNode, path: string, operation: string): Node {
  const node = resolveNode(root, path, operation);
  return node.kind === 'symlink' ? followLink(root, node, path, operation) : node;
}

export function followLink(
  root: DirectoryNode,
  link: SymlinkNode,
  path: string,
  operation: string,
): Node {
  const target = lookup(root, posix.resolve(posix.dirname(path), link.target));
  if (!target || target.kind === 'symlink') throw fileSystemError('ENOENT', operation, path);
  return target;
}
