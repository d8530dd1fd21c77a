// Lint: type-checked typescript-eslint rules, plus the architecture of
// src/ARCHITECTURE.md:
// - the floors: a module imports only from its own floor or the floors
//   below (cli and view -> present -> serve -> run -> triton -> inspect/manifest ->
//   format -> schema -> io -> the root leaves errors.ts, version.ts,
//   package-root.ts, json-schemas.ts);
// - the library boundary: nothing below src/present may print, exit or
//   depend on the CLI's libraries;
// - only src/schema/ may touch the generated FlatBuffers code;
// - a run-time import() goes through src/run/import-module.ts (the
//   launcher's rule, src/ARCHITECTURE.md "The launcher and import()").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { BUNDLE_EXTERNALS } from './scripts/bundle-externals.mjs';

const presentationModules = ['chalk', 'cli-table3', 'commander'];

/** The floors of src/, top first; a folder imports only from its own floor and those after it. */
export const FLOORS = [['cli', 'view'], ['present'], ['serve'], ['run'], ['triton'], ['inspect', 'manifest'], ['format'], ['schema'], ['io']];
/** Root modules every floor may use; they import no folder of src/. */
const ROOT_LEAVES = [
  'src/errors.ts',
  'src/version.ts',
  'src/package-root.ts',
  'src/json-schemas.ts',
  'src/json-schemas.browser.ts',
  'src/json-schema-lines.ts',
];

const ARCHITECTURE = 'src/ARCHITECTURE.md';

/** One no-restricted-imports block per floor (ESLint replaces, not merges, a rule's options). */
function floorImports(index) {
  const own = FLOORS[index];
  const above = FLOORS.slice(0, index).flat();
  const library = index >= 2;
  const patterns = above.map((folder) => ({
    group: [`**/${folder}/**`, `**/${folder}`],
    message: `src/${folder}/ is a floor above src/${own.join('/')}/: imports go only downward (${ARCHITECTURE}, "The floors")`,
  }));
  if (!own.includes('schema'))
    patterns.push({ group: ['**/schema/generated/**'], message: 'generated FlatBuffers code is used only inside src/schema' });
  const paths = library
    ? presentationModules.map((name) => ({ name, message: 'presentation belongs in src/present or src/cli, above the library boundary' }))
    : [];
  return { files: own.map((folder) => `src/${folder}/**/*.ts`), rules: { 'no-restricted-imports': ['error', { paths, patterns }] } };
}

/** src/index.ts, the library's entry: every library floor, nothing above the boundary. */
function entryImports() {
  const patterns = [{ group: ['./cli/**', './present/**'], message: 'the library must not depend on the CLI or presenters' }];
  patterns.push({ group: ['**/schema/generated/**'], message: 'generated FlatBuffers code is used only inside src/schema' });
  const paths = presentationModules.map((name) => ({ name, message: 'presentation belongs in src/present or src/cli, above the library boundary' }));
  return { files: ['src/index.ts'], rules: { 'no-restricted-imports': ['error', { paths, patterns }] } };
}

/** The root leaves import no folder of src/ at all. */
function leafImports() {
  const patterns = [
    { group: FLOORS.flat().map((folder) => `./${folder}/**`), message: `the root modules are leaves every floor imports (${ARCHITECTURE})` },
  ];
  const paths = presentationModules.map((name) => ({ name, message: 'presentation belongs in src/present or src/cli, above the library boundary' }));
  return { files: ROOT_LEAVES, rules: { 'no-restricted-imports': ['error', { paths, patterns }] } };
}

/**
 * The CLI runs from a bundle that the launcher compiles through vm.Script,
 * where import() has no loader on Node 20: a run-time import() (a computed
 * specifier, or a package the bundle leaves out) must go through
 * importModule(). Literal relative imports and bundled packages are inlined
 * by esbuild and stay allowed.
 */
const externalsPattern = BUNDLE_EXTERNALS.map((name) => name.replace(/[^\w-]/g, '.')).join('|');
const runTimeImport = {
  files: ['src/**/*.ts'],
  ignores: ['src/run/import-module.ts', 'src/cli/launch.ts'],
  rules: {
    'no-restricted-syntax': [
      'error',
      {
        selector: "ImportExpression:not([source.type='Literal'])",
        message: `import() of a specifier computed at run time breaks under the CLI launcher on Node 20: use importModule() from src/run/import-module.ts (${ARCHITECTURE}, "The launcher and import()")`,
      },
      {
        selector: `ImportExpression[source.value=/^(${externalsPattern})($|.)/]`,
        message: `this package is left out of the CLI bundle (scripts/bundle-externals.mjs): load it with importModule() or createRequire (${ARCHITECTURE}, "The launcher and import()")`,
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist/api/**', 'node_modules/**', 'src/schema/generated/**', 'coverage/**', '.bench/**', '.venv/**', '.install-test/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // node:test's describe/it return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', name: ['describe', 'it', 'test'], package: 'node:test' }] },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/present/**', 'src/view/**'],
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'the library must not read process state or exit; take it as a parameter' },
        { name: 'console', message: 'the library must not print; return data to the caller' },
      ],
    },
  },
  ...FLOORS.map((_, index) => floorImports(index)),
  entryImports(),
  leafImports(),
  runTimeImport,
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { parserOptions: { projectService: false }, globals: { process: 'readonly', AbortController: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { sourceType: 'commonjs', parserOptions: { projectService: false }, globals: { require: 'readonly', process: 'readonly' } },
    // CommonJS files load with require(): that is what they are for.
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
);
