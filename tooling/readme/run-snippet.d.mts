/** The ```ts blocks of `<packageDirectory>/README.md`, imports of `packageName` pointed at src. */
export function readmeBlocks(options: { packageDirectory: string; packageName: string }): string[];
/** The one block containing every one of `needles`; throws when none or several do. */
export function readmeBlockWith(blocks: readonly string[], ...needles: string[]): string;
/** Imports `code` as a module of the package's test folder, then deletes the file. */
export function importSnippet(
  packageDirectory: string,
  code: string,
): Promise<Record<string, unknown>>;
