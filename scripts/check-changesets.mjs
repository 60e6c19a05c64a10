// Fails when a changeset file is not what `changeset version` can read: front matter of
// `'package': major|minor|patch` lines between `---` fences, then a non-empty summary.
// (A formatter once turned the front matter into a Markdown heading; nothing noticed.)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const directory = new URL('../.changeset/', import.meta.url).pathname;
const frontMatter = /^---\n((?:'[@\w./-]+': (?:major|minor|patch)\n)+)---\n\n(\S[\s\S]*)$/;
const problems = [];
for (const name of readdirSync(directory).filter((file) => file.endsWith('.md'))) {
  if (name === 'README.md') continue;
  const text = readFileSync(join(directory, name), 'utf8');
  if (!frontMatter.test(text)) problems.push(name);
}
if (problems.length > 0) {
  console.error(`changesets with front matter changesets cannot read: ${problems.join(', ')}`);
  process.exit(1);
}
console.log('changesets: every file readable');
