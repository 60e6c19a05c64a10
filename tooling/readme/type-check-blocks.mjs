// Type-checks a README's TypeScript blocks as a user's code would be (strict, NodeNext),
// each block a module of its own placed in the package's test folder, so its imports
// resolve as in an app. Shared by the packages whose READMEs are tested this way.
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/** The compiler problems of every ```ts block of `<packageDirectory>/README.md`, as texts. */
export function typeCheckReadmeBlocks({ packageDirectory, packageName, aliases = {} }) {
  const readme = readFileSync(`${packageDirectory}README.md`, 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
  const files = new Map(
    blocks.map((code, index) => [
      `${packageDirectory}test/readme-block-${index + 1}.ts`,
      // The package's own name resolves to its source, as the published one resolves to dist.
      Object.entries(aliases).reduce(
        (text, [name, installed]) => text.replaceAll(`from '${name}'`, `from '${installed}'`),
        code.replaceAll(`from '${packageName}'`, "from '../src/index.js'"),
      ),
    ]),
  );
  const options = {
    target: ts.ScriptTarget.ES2023,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    skipLibCheck: true,
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const code = files.get(name);
    return code === undefined
      ? getSourceFile.call(host, name, language, ...rest)
      : ts.createSourceFile(name, code, language);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const problems = ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  return { blocks: blocks.length, problems };
}
