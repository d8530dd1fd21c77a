import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { FIXTURES, fixture, inTempDir, matchGolden, runCli } from '../helpers.js';

const golden = (name: string, actual: string): Promise<void> => matchGolden('diff', name, actual);

interface DiffJson {
  identical: boolean;
  changes: { change: string; subject: string; scope: string; field?: string; before?: unknown; after?: unknown }[];
}

const cases: [string, number, (d: DiffJson) => void][] = [
  ['identical', 0, (d) => assert.deepEqual(d.changes, [])],
  [
    'anchor-renamed',
    1,
    (d) => {
      assert.ok(d.changes.some((c) => c.change === 'removed' && c.subject === 'model "777" anchor "image" (INPUT)'));
      assert.ok(d.changes.some((c) => c.change === 'added' && c.subject === 'model "777" anchor "pixels" (INPUT)'));
    },
  ],
  [
    'dtype-changed',
    1,
    (d) => assert.ok(d.changes.some((c) => c.scope === 'anchor' && c.field === 'dtype' && c.before === 'F32' && c.after === 'F16')),
  ],
  [
    'blob-added',
    1,
    (d) =>
      assert.deepEqual(
        d.changes.map((c) => [c.change, c.subject]),
        [['added', 'blob OPAQUE "poptorch" -> "777"']],
      ),
  ],
  [
    'metadata-changed',
    1,
    (d) => assert.ok(d.changes.some((c) => c.scope === 'metadata' && c.field === 'deviceIterations' && c.before === 1 && c.after === 16)),
  ],
];

describe('popef diff on fixture pairs', () => {
  for (const [name, code, check] of cases) {
    it(`base vs ${name}: exit ${code}, text, JSON (schema) and Markdown`, async () => {
      const args = ['diff', 'diff/base.popef', `diff/${name}.popef`];
      const json = await runCli([...args, '--json'], { cwd: FIXTURES });
      assert.equal(json.code, code, json.stderr);
      const report = JSON.parse(json.stdout) as DiffJson;
      assert.deepEqual(schemaErrors('diff', report), []);
      assert.equal(report.identical, code === 0);
      check(report);
      await golden(`${name}.txt`, (await runCli(args, { cwd: FIXTURES })).stdout);
      await golden(`${name}.md`, (await runCli([...args, '--markdown'], { cwd: FIXTURES })).stdout);
    });
  }

  it('--ignore drops expected differences by field, scope.field or scope', async () => {
    const args = ['diff', 'diff/base.popef', 'diff/metadata-changed.popef', '--json'];
    const some = JSON.parse(
      (await runCli([...args, '--ignore', 'metadata.deviceIterations', '--ignore', 'crc32'], { cwd: FIXTURES })).stdout,
    ) as DiffJson;
    assert.deepEqual(
      some.changes.map((c) => c.field),
      ['engineOptions', 'size'],
    );
    const all = await runCli([...args, '--ignore', 'metadata', '--ignore', 'METADATA'], { cwd: FIXTURES });
    assert.equal(all.code, 0);
    assert.equal((JSON.parse(all.stdout) as DiffJson).identical, true);
  });

  it('compares model sets split over several files, with --', async () => {
    const r = await runCli(['diff', '--json', 'split/executable.popef', 'split/variables.popef', '--', 'split/executable.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 1);
    assert.deepEqual(
      (JSON.parse(r.stdout) as DiffJson).changes.map((c) => [c.change, c.subject]),
      [['removed', 'blob DATA_TENSOR "w"']],
    );
  });

  it('pairs single models whatever their executable names, comparing executables by checksum', async () => {
    const r = await runCli(['diff', 'seed/executable.popef', 'diff/base.popef', '--json'], { cwd: FIXTURES });
    const d = JSON.parse(r.stdout) as DiffJson;
    assert.ok(d.changes.some((c) => c.scope === 'model' && c.field === 'executable' && c.before === '5230962391836378370' && c.after === '777'));
    assert.ok(d.changes.some((c) => c.scope === 'POPLAR_EXECUTABLE' && c.field === 'crc32'));
  });

  it('exits 2 on errors and on a wrong number of files', async () => {
    const bad = await runCli(['diff', 'diff/base.popef', 'malformed/not-popef.bin'], { cwd: FIXTURES });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a PopEF open-layout file/);
    const three = await runCli(['diff', 'diff/base.popef', 'diff/base.popef', 'diff/base.popef'], { cwd: FIXTURES });
    assert.equal(three.code, 2);
    assert.match(three.stderr, /give two files \(popef diff A B\), or separate the two sides with --/);
  });
});

describe('popef diff of a compressed and an uncompressed copy of one executable', () => {
  /** fixtures/compressed/executable.popef unpacked and packed again without compression, its executable changed by `edit` first. */
  async function uncompressedCopy(dir: string, edit?: (bytes: Buffer) => void): Promise<string> {
    const unpacked = join(dir, 'unpacked');
    const u = await runCli(['unpack', fixture('compressed/executable.popef'), '-o', unpacked]);
    assert.equal(u.code, 0, u.stderr);
    const manifestPath = join(unpacked, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { blobs: { type: string; file?: string; compress?: boolean }[] };
    const exe = manifest.blobs.find((b) => b.type === 'POPLAR_EXECUTABLE');
    assert.equal(exe?.compress, true, 'the fixture compresses its executable');
    exe.compress = false;
    await writeFile(manifestPath, JSON.stringify(manifest));
    if (edit !== undefined) {
      const bin = join(unpacked, exe.file ?? '');
      const bytes = await readFile(bin);
      edit(bytes);
      await writeFile(bin, bytes);
    }
    const out = join(dir, 'plain.popef');
    const p = await runCli(['pack', manifestPath, '-o', out]);
    assert.equal(p.code, 0, p.stderr);
    return out;
  }

  it('says that they hold the same bytes, in text, Markdown and JSON (schema); exit 1, the stored bytes differ', async () => {
    await inTempDir(async (dir) => {
      const plain = await uncompressedCopy(dir);
      const args = ['diff', fixture('compressed/executable.popef'), plain];
      const text = await runCli(args);
      assert.equal(text.code, 1, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      assert.deepEqual(
        lines.slice(2, 5).map((l) => l.replace(/: (\w+) .*/, ': $1')),
        ['~ blob POPLAR_EXECUTABLE "99": size', '~ blob POPLAR_EXECUTABLE "99": crc32', '~ blob POPLAR_EXECUTABLE "99": compression'],
      );
      assert.match(
        lines[5] ?? '',
        /^= blob POPLAR_EXECUTABLE "99": the same 4\.00 KiB on both sides once inflated \(CRC-32 0x[0-9a-f]{8}\); only how they are stored differs \(compression zlib -> none\)$/,
      );
      assert.equal(lines[6], '3 differences, all in how the same bytes are stored');
      const json = await runCli([...args, '--json']);
      const report = JSON.parse(json.stdout) as DiffJson & {
        sameContent?: { subject: string; bytes: number; crc32: string; compression: unknown }[];
      };
      assert.deepEqual(schemaErrors('diff', report), []);
      // The CRC-32 of the inflated bytes is the uncompressed copy's stored one.
      const plainCrc = report.changes.find((c) => c.field === 'crc32')?.after;
      assert.deepEqual(report.sameContent, [
        { subject: 'blob POPLAR_EXECUTABLE "99"', bytes: 4096, crc32: plainCrc, compression: { a: 'zlib', b: 'none' } },
      ]);
      const md = await runCli([...args, '--markdown']);
      assert.match(md.stdout, /\n3 difference\(s\), all in how the same bytes are stored\.\n$/);
    });
  });

  it('does not when one byte of the executable differs', async () => {
    await inTempDir(async (dir) => {
      const plain = await uncompressedCopy(dir, (bytes) => {
        bytes[100] = (bytes[100] ?? 0) ^ 1;
      });
      const text = await runCli(['diff', fixture('compressed/executable.popef'), plain]);
      assert.equal(text.code, 1, text.stderr);
      assert.doesNotMatch(text.stdout, /same/);
      assert.match(text.stdout, /\n3 differences\n$/);
      const json = JSON.parse((await runCli(['diff', fixture('compressed/executable.popef'), plain, '--json'])).stdout) as Record<string, unknown>;
      assert.equal('sameContent' in json, false);
    });
  });
});
