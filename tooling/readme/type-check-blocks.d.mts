/** The compiler problems of every ```ts block of `<packageDirectory>/README.md`, as texts. */
export function typeCheckReadmeBlocks(options: {
  /** The package's directory, ending with a slash. */
  packageDirectory: string;
  /** Imports of this name resolve to the package's `src/index.ts`. */
  packageName: string;
  /** Imports of a package the README names, checked against one installed here instead. */
  aliases?: Record<string, string>;
}): { blocks: number; problems: string[] };
