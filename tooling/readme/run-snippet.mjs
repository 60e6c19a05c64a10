// Runs a README's snippet as written inside the package (so its imports resolve as in an
// app), after the test replaced only where it connects. Shared by the packages whose
// README snippets are run against real backends.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';

/** The ```ts blocks of `<packageDirectory>/README.md`, imports of `packageName` pointed at src. */
export function readmeBlocks({ packageDirectory, packageName }) {
  const readme = readFileSync(`${packageDirectory}README.md`, 'utf8');
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) =>
    match[1].replaceAll(`from '${packageName}'`, "from '../src/index.js'"),
  );
}

/** The one block containing every one of `needles`; throws when none or several do. */
export function readmeBlockWith(blocks, ...needles) {
  const found = blocks.filter((block) => needles.every((needle) => block.includes(needle)));
  if (found.length !== 1) {
    throw new Error(`README: ${found.length} ts blocks contain ${needles.join(' and ')}, not 1`);
  }
  return found[0];
}

/** Imports `code` as a module of the package's test folder, then deletes the file. */
export async function importSnippet(packageDirectory, code) {
  const file = `${packageDirectory}test/readme-snippet-${randomUUID()}.ts`;
  await writeFile(file, code);
  try {
    return await import(file);
  } finally {
    await rm(file, { force: true });
  }
}
