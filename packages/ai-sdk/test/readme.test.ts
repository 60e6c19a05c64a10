import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';

/**
 * The README's TypeScript blocks compile as a user's code would (strict, NodeNext), against
 * this package's source and the installed `ai`: a README that drifts from the API fails here.
 * Each block is a module of its own, placed in the package so imports resolve as in an app.
 */
const packageDirectory = fileURLToPath(new URL('../', import.meta.url));

it('every ts block of the README type-checks', () => {
  const readme = readFileSync(`${packageDirectory}README.md`, 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  expect(blocks.length).toBeGreaterThanOrEqual(2);
  const files = new Map(
    blocks.map((code, index) => [
      `${packageDirectory}test/readme-block-${index + 1}.ts`,
      // The package's own name resolves to its source, as the published one resolves to dist.
      code.replaceAll("from '@keepsake/ai-sdk'", "from '../src/index.js'"),
    ]),
  );
  const options: ts.CompilerOptions = {
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
  expect(problems).toEqual([]);
});
