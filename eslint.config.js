// Lint: type-checked typescript-eslint rules, plus the layering of
// docs/design.md: nothing below the library boundary (src/index.ts) may
// print, exit or depend on the CLI's libraries, and only src/schema/ may
// touch the generated FlatBuffers code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const presentationModules = ['chalk', 'cli-table3', 'commander'];

/** One no-restricted-imports block per layer (ESLint replaces, not merges, a rule's options). */
function restrictImports(files, ignores, { presentation, upward, generated }) {
  const patterns = [];
  if (upward) patterns.push({ group: ['**/cli/**', '**/present/**'], message: 'the library must not depend on the CLI or presenters' });
  if (generated) patterns.push({ group: ['**/schema/generated/**'], message: 'generated FlatBuffers code is used only inside src/schema' });
  const paths = presentation
    ? presentationModules.map((name) => ({ name, message: 'presentation belongs in src/present or src/cli, above the library boundary' }))
    : [];
  return { files, ignores, rules: { 'no-restricted-imports': ['error', { paths, patterns }] } };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/schema/generated/**', 'coverage/**', '.bench/**', '.venv/**', '.install-test/**'] },
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
  restrictImports(['src/**/*.ts'], ['src/cli/**', 'src/present/**', 'src/view/**', 'src/schema/**'], { presentation: true, upward: true, generated: true }),
  restrictImports(['src/schema/**/*.ts'], [], { presentation: true, upward: true, generated: false }),
  restrictImports(['src/cli/**/*.ts', 'src/present/**/*.ts', 'src/view/**/*.ts'], [], { presentation: false, upward: false, generated: true }),
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
