// The rules of src/ARCHITECTURE.md that lint enforces (eslint.config.js):
// probes that break each rule once, linted as if they were real modules, so
// a rule that stops firing fails here rather than silently.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { ROOT } from './helpers.js';

// Only the two architecture rules, without type information: the probes are
// about imports, and a type-checked lint of each would take seconds.
const eslint = new ESLint({
  cwd: ROOT,
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports' || ruleId === 'no-restricted-syntax',
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
});

async function complaints(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? ''}: ${m.message}`);
}

describe('lint: the floors of src/ARCHITECTURE.md', () => {
  const upward: [string, string][] = [
    ['src/io/cursor.ts', '../format/reader.js'],
    ['src/schema/model.ts', '../format/constants.js'],
    ['src/format/reader.ts', '../inspect/report.js'],
    ['src/inspect/report.ts', '../triton/name-map.js'],
    ['src/triton/name-map.ts', '../serve/server.js'],
    ['src/triton/repository/validate.ts', '../../run/tensor.js'],
    ['src/run/tensor.ts', '../serve/server.js'],
    ['src/serve/server.ts', '../present/progress.js'],
    ['src/present/progress.ts', '../cli/main.js'],
    ['src/index.ts', './cli/main.js'],
    ['src/errors.ts', './io/cursor.js'],
  ];
  for (const [file, target] of upward) {
    it(`${file} may not import ${target}`, async () => {
      const found = await complaints(file, `export * from '${target}';\n`);
      assert.equal(found.length, 1, found.join('\n'));
      assert.match(found[0] ?? '', /^no-restricted-imports: .*(imports go only downward|must not depend on the CLI|root modules are leaves)/);
    });
  }

  const downward: [string, string][] = [
    ['src/cli/main.ts', '../serve/server.js'],
    ['src/serve/server.ts', '../run/tensor.js'],
    ['src/run/tensor.ts', '../triton/name-map.js'],
    ['src/triton/name-map.ts', '../inspect/report.js'],
    ['src/inspect/report.ts', '../format/reader.js'],
    ['src/format/reader.ts', '../schema/decode.js'],
    ['src/schema/decode.ts', '../io/cursor.js'],
    ['src/manifest/pack.ts', '../errors.js'],
  ];
  for (const [file, target] of downward) {
    it(`${file} may import ${target}`, async () => {
      assert.deepEqual(await complaints(file, `export * from '${target}';\n`), []);
    });
  }

  it('below the boundary, no presentation library; outside src/schema, no generated code', async () => {
    assert.match((await complaints('src/run/tensor.ts', "export * from 'chalk';\n")).join(), /presentation belongs in src\/present/);
    assert.match(
      (await complaints('src/format/reader.ts', "export * from '../schema/generated/popef/open/metadata.js';\n")).join(),
      /generated FlatBuffers code/,
    );
    assert.deepEqual(await complaints('src/schema/decode.ts', "export * from './generated/popef/open/metadata.js';\n"), []);
  });
});

describe('lint: run-time import() only through src/run/import-module.ts', () => {
  it('refuses a computed specifier and a package the bundle leaves out', async () => {
    assert.match(
      (await complaints('src/run/load-plugin.ts', 'export const f = (s: string): Promise<unknown> => import(s);\n')).join(),
      /use importModule\(\)/,
    );
    assert.match(
      (await complaints('src/serve/server.ts', "export const f = (): Promise<unknown> => import('@grpc/grpc-js');\n")).join(),
      /left out of the CLI bundle/,
    );
  });

  it('allows literal relative imports, bundled packages, and import-module.ts itself', async () => {
    assert.deepEqual(await complaints('src/cli/main.ts', "export const f = (): Promise<unknown> => import('./commands/index.js');\n"), []);
    assert.deepEqual(await complaints('src/present/colour.ts', "export const f = (): Promise<unknown> => import('chalk');\n"), []);
    assert.deepEqual(await complaints('src/run/import-module.ts', 'export const f = (s: string): Promise<unknown> => import(s);\n'), []);
  });
});
