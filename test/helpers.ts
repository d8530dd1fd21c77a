import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../src/cli/main.js';
import type { CliIo } from '../src/cli/io.js';
import type { FixtureEntry, RepositoryEntry } from '../fixtures/manifest-types.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const FIXTURES = join(ROOT, 'fixtures');

export function fixture(path: string): string {
  return join(FIXTURES, path);
}

/** What bin/popef.cjs loads: the CLI as `npm run build` bundles it into dist/. */
const BUILT_CLI = ['dist/launch.cjs', 'dist/bin.cjs'];

/**
 * bin/popef.cjs, for a test that runs the built CLI as a user does. Throws at
 * once, saying to build, when dist/ lacks what it loads: otherwise such a test
 * first waits for the servers it starts beside the CLI, then ends on a
 * MODULE_NOT_FOUND stack that does not say what to do.
 */
export function builtCli(): string {
  const missing = BUILT_CLI.filter((f) => !existsSync(join(ROOT, f)));
  if (missing.length > 0)
    throw new Error(
      `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} missing: run \`npm run build\` first (this test runs the built CLI)`,
    );
  return join(ROOT, 'bin/popef.cjs');
}

export async function repositoryFixtures(): Promise<RepositoryEntry[]> {
  const parsed = JSON.parse(await readFile(fixture('manifest.json'), 'utf8')) as { repositories: RepositoryEntry[] };
  return parsed.repositories;
}

export async function fixtureManifest(): Promise<FixtureEntry[]> {
  const parsed = JSON.parse(await readFile(fixture('manifest.json'), 'utf8')) as { fixtures: FixtureEntry[] };
  return parsed.fixtures;
}

/** A temporary directory, removed by the returned cleanup. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'popef-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A fresh clone of this repository's committed HEAD in `<dir>/popef-toolkit`,
 * as a new user gets it, with the named entries of this checkout (say
 * node_modules, the result of npm ci) linked in.
 */
export async function scratchClone(dir: string, linked: readonly string[]): Promise<string> {
  const clone = join(dir, 'popef-toolkit');
  const git = spawnSync('git', ['clone', '-q', ROOT, clone], { encoding: 'utf8' });
  assert.equal(git.status, 0, git.stderr);
  for (const entry of linked) await symlink(join(ROOT, entry), join(clone, entry));
  return clone;
}

/** Runs `body` with a fresh temporary directory, removed afterwards whatever happens. */
export async function inTempDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const { dir, cleanup } = await tempDir();
  try {
    return await body(dir);
  } finally {
    await cleanup();
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with captured output, colour off, in `cwd`. */
export async function runCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    stdoutIsTTY: false,
    stderrIsTTY: false,
    env: options.env ?? {},
    cwd: options.cwd ?? ROOT,
    signal: new AbortController().signal,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/**
 * Compares `actual` with the golden file `test/golden/<area>/<name>`, or
 * rewrites that file when UPDATE_GOLDEN=1 (then review the diff).
 */
export async function matchGolden(area: string, name: string, actual: string): Promise<void> {
  const path = join(ROOT, 'test/golden', area, name);
  if (process.env.UPDATE_GOLDEN === '1') {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, actual);
    return;
  }
  let expected: string;
  try {
    expected = await readFile(path, 'utf8');
  } catch {
    assert.fail(`golden file ${area}/${name} is missing: run UPDATE_GOLDEN=1 npm run test:unit and review the diff`);
  }
  assert.equal(actual, expected, `${area}/${name} differs from its golden file`);
}
