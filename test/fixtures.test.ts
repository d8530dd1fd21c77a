import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ModelSet, PopefError } from '../src/index.js';
import { FIXTURES, ROOT, fixture, fixtureManifest, inTempDir } from './helpers.js';

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(relative(dir, join(entry.parentPath, entry.name)));
  }
  return out.sort();
}

const entries = await fixtureManifest();

describe('fixtures/manifest.json', () => {
  it('lists every fixture file, and every listed file exists', async () => {
    const listed = new Set((await fixtureManifest()).flatMap((f) => [f.path, ...(f.with ?? [])]));
    // Repository fixtures (repos/) carry copies of PopEF files; they are listed in their own section.
    const onDisk = (await listFiles(FIXTURES)).filter((f) => (f.endsWith('.popef') || f.endsWith('.bin')) && !f.startsWith('repos/'));
    assert.deepEqual([...listed].sort(), onDisk);
  });

  for (const entry of entries) {
    it(`${entry.path}: ${entry.expect.ok ? 'opens' : `fails with ${entry.expect.code}`}`, async () => {
      const paths = [entry.path, ...(entry.with ?? [])].map(fixture);
      const expect = entry.expect;
      if (expect.ok) {
        const set = await ModelSet.open(paths);
        try {
          assert.equal(set.models.length, expect.models);
          assert.equal(set.blobs.length, expect.blobs);
          assert.deepEqual(
            set.warnings.map((w) => w.code),
            expect.warnings ?? [],
          );
          for (const blob of set.blobs) await set.fileOf(blob).verifyBlob(blob);
        } finally {
          await set.close();
        }
        return;
      }
      let caught: unknown;
      try {
        const set = await ModelSet.open(paths);
        try {
          if (expect.onlyWithVerify === true) for (const blob of set.blobs) await set.fileOf(blob).verifyBlob(blob);
        } finally {
          await set.close();
        }
      } catch (error) {
        caught = error;
      }
      assert.ok(caught instanceof PopefError, `expected a PopefError, got ${String(caught)}`);
      assert.equal(caught.code, expect.code, caught.describe());
      assert.equal(caught.file, paths[0]);
      if (expect.offset !== undefined) assert.equal(caught.offset, expect.offset, caught.describe());
      if (expect.field !== undefined) assert.equal(caught.field, expect.field, caught.describe());
    });
  }
});

describe('fixture generator', () => {
  it('regenerates every fixture byte for byte', async () => {
    await inTempDir(async (dir) => {
      await promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'fixtures/generate.ts'), dir], { cwd: ROOT });
      // Generated data only: the generator, the simulated SDK, the copied Graphcore examples and the digits data are sources.
      const sources = ['sim-sdk/', 'graphcore-examples/', 'data/'];
      const committed = (await listFiles(FIXTURES)).filter((f) => !f.endsWith('.ts') && !sources.some((s) => f.startsWith(s)));
      assert.deepEqual(await listFiles(dir), committed);
      for (const file of committed) {
        const a = await readFile(join(FIXTURES, file));
        const b = await readFile(join(dir, file));
        assert.ok(a.equals(b), `${file} differs from a fresh regeneration: run npm run fixtures`);
      }
    });
  });
});
