import assert from 'node:assert/strict';
import { copyFile, readFile, readdir, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, fixtureManifest, inTempDir, runCli } from '../helpers.js';

// A blob that claims a newer minor version is rewritten as this layout's
// version by pack (fields added since are unknown to us), so its bytes change;
// that fixture has its own test below.
const packable = (await fixtureManifest()).filter((f) => f.expect.ok && !(f.expect.warnings ?? []).includes('W_NEWER_MINOR_VERSION'));

describe('popef unpack then pack', () => {
  for (const entry of packable) {
    it(`${entry.path} comes back byte for byte`, async () => {
      await inTempDir(async (dir) => {
        const unpacked = await runCli(['unpack', fixture(entry.path), '-o', join(dir, 'out')]);
        assert.equal(unpacked.code, 0, unpacked.stderr);
        assert.doesNotMatch(unpacked.stderr, /not kept/);
        const packed = await runCli(['pack', join(dir, 'out/manifest.json'), '-o', join(dir, 'copy.popef')]);
        assert.equal(packed.code, 0, packed.stderr);
        const original = await readFile(fixture(entry.path));
        const copy = await readFile(join(dir, 'copy.popef'));
        assert.ok(copy.equals(original), 'repacked bytes differ');
      });
    });
  }

  it('warns, as dump does, that the fields a newer minor layout added are not kept', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['unpack', fixture('malformed/newer-minor.popef'), '-o', join(dir, 'u')]);
      assert.equal(r.code, 0, r.stderr);
      const dump = await runCli(['dump', fixture('malformed/newer-minor.popef')]);
      const dumpWarnings = dump.stderr.split('\n').filter((l) => l.startsWith('popef: warning:'));
      assert.ok(dumpWarnings.length > 0, 'dump warns about the newer minor version');
      // The same warning lines as dump, each followed by what unpack and pack do about it.
      assert.deepEqual(
        r.stderr.split('\n').filter((l) => l.startsWith('popef: warning:')),
        dumpWarnings,
      );
      assert.match(
        r.stderr,
        /newer than 1\.0; fields added since are ignored\n {2}they are not kept: the manifest holds the fields this version knows, and popef pack writes the blob without the newer ones\n/,
      );
    });
  });

  it('rewrites a newer-minor blob at this layout version, with the same content', async () => {
    await inTempDir(async (dir) => {
      assert.equal((await runCli(['unpack', fixture('malformed/newer-minor.popef'), '-o', join(dir, 'u')])).code, 0);
      assert.equal((await runCli(['pack', join(dir, 'u/manifest.json'), '-o', join(dir, 'c.popef')])).code, 0);
      const copy = await readFile(join(dir, 'c.popef'));
      assert.ok(copy.equals(await readFile(fixture('seed/executable.popef'))), 'expected the seed fixture it was made from');
    });
  });

  it('writes the decompressed executable and marks it for compression', async () => {
    await inTempDir(async (dir) => {
      assert.equal((await runCli(['unpack', fixture('compressed/executable.popef'), '-o', join(dir, 'u')])).code, 0);
      const manifest = JSON.parse(await readFile(join(dir, 'u/manifest.json'), 'utf8')) as {
        blobs: { type: string; compress?: boolean; file?: string }[];
      };
      const exe = manifest.blobs[0];
      assert.equal(exe?.type, 'POPLAR_EXECUTABLE');
      assert.equal(exe.compress, true);
      assert.equal((await readFile(join(dir, 'u', exe.file ?? ''))).byteLength, 4096);
    });
  });
});

describe('popef unpack errors', () => {
  it('exits 2 on a damaged payload and leaves no directory', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['unpack', fixture('malformed/payload-bitflip.popef'), '-o', join(dir, 'out')]);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /payload-bitflip\.popef: offset \d+: POPLAR_EXECUTABLE payload crc32: payload checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/,
      );
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('refuses an existing directory without --force', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'out'));
      await writeFile(join(dir, 'out/keep'), 'x');
      const r = await runCli(['unpack', fixture('mnist/executable.popef'), '-o', join(dir, 'out')]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /output directory already exists \[E_EXISTS\]\n {2}hint: use --force/);
      assert.deepEqual(await readdir(join(dir, 'out')), ['keep']);
      // --force replaces an earlier unpack, never a directory of other files.
      const refused = await runCli(['unpack', fixture('mnist/executable.popef'), '-o', join(dir, 'out'), '--force']);
      assert.equal(refused.code, 2);
      assert.match(
        refused.stderr,
        /holds files that popef unpack did not write \(it has no manifest\.json\); --force replaces only an earlier unpack \[E_EXISTS\]/,
      );
      assert.deepEqual(await readdir(join(dir, 'out')), ['keep']);
      assert.equal((await runCli(['unpack', fixture('mnist/executable.popef'), '-o', join(dir, 'fresh')])).code, 0);
      const forced = await runCli(['unpack', fixture('mnist/executable.popef'), '-o', join(dir, 'fresh'), '--force']);
      assert.equal(forced.code, 0, forced.stderr);
      assert.ok((await readdir(join(dir, 'fresh'))).includes('manifest.json'));
    });
  });

  it('never replaces the directory that holds the input (-o . --force)', async () => {
    await inTempDir(async (dir) => {
      await copyFile(fixture('mnist/executable.popef'), join(dir, 'model.popef'));
      await writeFile(join(dir, 'notes.txt'), 'mine');
      await writeFile(join(dir, 'manifest.json'), '{}');
      const r = await runCli(['unpack', 'model.popef', '-o', '.', '--force'], { cwd: dir });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /the output directory holds the input file; replacing it would delete the input \[E_EXISTS\]/);
      assert.deepEqual((await readdir(dir)).sort(), ['manifest.json', 'model.popef', 'notes.txt']);
    });
  });
});

describe('popef pack errors', () => {
  async function packWith(manifest: unknown, files: Record<string, string> = {}): Promise<{ code: number; stderr: string; listing: string[] }> {
    return inTempDir(async (dir) => {
      await writeFile(join(dir, 'manifest.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
      for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
      const r = await runCli(['pack', join(dir, 'manifest.json'), '-o', join(dir, 'out.popef')]);
      return { code: r.code, stderr: r.stderr, listing: (await readdir(dir)).sort() };
    });
  }
  const base = { format: 'popef-open-manifest', version: 1 };

  it('reports schema errors as JSON-pointer paths', async () => {
    const r = await packWith({ ...base, blobs: [{ type: 'DATA_TENSOR', name: 't', tensorInfo: { dtype: 'F33', shape: [2] }, file: 't.bin' }] });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /manifest does not match its schema:\n {2}\/blobs\/0\/tensorInfo\/dtype: must be equal to one of the allowed values \(BOOL, F8/,
    );
    assert.ok(!r.listing.includes('out.popef'));
  });

  it('reports invalid JSON', async () => {
    const r = await packWith('{ "format": ');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /manifest\.json: manifest is not valid JSON/);
  });

  it('refuses an inconsistent model before writing anything', async () => {
    const r = await packWith({ ...base, blobs: [{ type: 'OPAQUE', name: 'o', executable: 'nope', file: 'o.bin' }] }, { 'o.bin': 'x' });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /manifest\.json#\/blobs\/0: opaque.executable: opaque blob "o" refers to executable "nope", which is not in the model set/,
    );
    assert.deepEqual(r.listing, ['manifest.json', 'o.bin']);
  });

  it('names a missing payload file', async () => {
    const r = await packWith({ ...base, blobs: [{ type: 'POPLAR_EXECUTABLE', name: 'e', file: 'missing.bin' }] });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /manifest\.json#\/blobs\/0: cannot read payload file "missing\.bin": ENOENT/);
  });

  it('reports a payload of the wrong size and leaves nothing behind', async () => {
    const r = await packWith(
      { ...base, blobs: [{ type: 'DATA_TENSOR', name: 't', tensorInfo: { dtype: 'F32', shape: [2] }, file: 't.bin' }] },
      { 't.bin': 'abc' },
    );
    assert.equal(r.code, 2);
    assert.match(r.stderr, /#\/blobs\/0: payload: payload has 3 bytes, but 8 are required/);
    assert.deepEqual(r.listing, ['manifest.json', 't.bin']);
  });
});
