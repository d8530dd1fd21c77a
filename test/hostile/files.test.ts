import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { outputFileNames } from '../../src/run/tensor-io/output-files.js';
import { fixture, inTempDir } from '../helpers.js';
import { assertCleanError, spawnPopef } from './spawn-popef.js';

/**
 * Hostile local files: FIFOs, devices, huge and damaged files, paths that
 * leave their directory. Each must end at once with the documented exit
 * code and one error line (plus a hint) that names the file, in bounded
 * memory, with no stack trace and nothing written.
 */

const MNIST = fixture('mnist/executable.popef');

function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

describe('hostile local files', () => {
  it('refuses a FIFO anywhere a file is read, without waiting for a writer', async () => {
    await inTempDir(async (dir) => {
      const fifo = join(dir, 'pipe');
      mkfifo(fifo);
      assertCleanError(await spawnPopef(['dump', fifo]), 2, /pipe: cannot read the file: it is a FIFO \(named pipe\), not a regular file \[E_IO\]/);
      assertCleanError(await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${fifo}`]), 2, /cannot read input "input": it is a FIFO/);
      assertCleanError(await spawnPopef(['pack', fifo, '-o', join(dir, 'out.popef')]), 2, /cannot read the manifest: it is a FIFO/);
      assertCleanError(await spawnPopef(['config', fifo]), 2, /it is a FIFO/);
      assertCleanError(
        await spawnPopef(['import', fifo, '-o', join(dir, 'imported.popef')], { env: { PYTHONPATH: fixture('sim-sdk') } }),
        2,
        /pipe: cannot read the file: it is a FIFO/,
      );
      assert.deepEqual((await readdir(dir)).sort(), ['pipe']);
    });
  });

  it('refuses a device with no end (/dev/zero) as an input, a model or a manifest', async () => {
    assertCleanError(
      await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', 'input=/dev/zero']),
      2,
      /\/dev\/zero: cannot read input "input": it is a character device/,
    );
    assertCleanError(await spawnPopef(['dump', '/dev/zero']), 2, /\/dev\/zero: cannot read the file: it is a character device/);
    assertCleanError(await spawnPopef(['pack', '/dev/zero', '-o', '/tmp/never.popef']), 2, /cannot read the manifest: it is a character device/);
  });

  it('refuses an input file far larger than its tensor before reading it, in bounded memory', async () => {
    await inTempDir(async (dir) => {
      for (const ext of ['bin', 'npy', 'json', 'png']) {
        const huge = join(dir, `huge.${ext}`);
        await writeFile(huge, '');
        await truncate(huge, 8 * 1024 ** 3); // sparse: nothing is stored
        const run = await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${huge}`]);
        assertCleanError(run, 2, new RegExp(`huge\\.${ext}: input "input": the file is larger than \\d+ bytes`));
        assert.ok((run.maxRssMiB ?? 0) < 300, `peak RSS ${run.maxRssMiB ?? '?'} MiB`);
      }
    });
  });

  it('refuses JSON nested far deeper than the input, without a stack overflow', async () => {
    await inTempDir(async (dir) => {
      const deep = join(dir, 'deep.json');
      await writeFile(deep, `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${deep}`]),
        2,
        /deep\.json: input "input": the lists are nested deeper than the input's 4 dimension\(s\)/,
      );
      const wrapped = join(dir, 'wrapped.json');
      let text = '[0]';
      for (let i = 0; i < 50_000; i++) text = `{"data":${text}}`;
      await writeFile(wrapped, text);
      assertCleanError(await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${wrapped}`]), 2, /"data" must be a list of numbers/);
    });
  });

  it('refuses a PNG whose image data is cut short, or which lacks its end', async () => {
    await inTempDir(async (dir) => {
      const image = await readFile(fixture('mnist/img/0.png'));
      // Chunks: signature, IHDR (25 bytes), then IDAT.
      const idatLength = image.readUInt32BE(33);
      const cut = Math.floor(idatLength / 3);
      const { crc32 } = await import('node:zlib');
      const body = image.subarray(37, 41 + cut);
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(body) >>> 0);
      const length = Buffer.alloc(4);
      length.writeUInt32BE(cut);
      const truncated = Buffer.concat([image.subarray(0, 33), length, body, crc, image.subarray(41 + idatLength + 4)]);
      await writeFile(join(dir, 'cut.png'), truncated);
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${join(dir, 'cut.png')}`]),
        2,
        /cut\.png: input "input": not a complete PNG: its image data does not inflate completely/,
      );
      await writeFile(join(dir, 'noend.png'), image.subarray(0, image.length - 12));
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${join(dir, 'noend.png')}`]),
        2,
        /noend\.png: input "input": not a complete PNG: it has no IEND chunk/,
      );
      // A header claiming a huge image is refused before pngjs allocates it.
      const giant = Buffer.from(image);
      giant.writeUInt32BE(100_000, 16);
      giant.writeUInt32BE(100_000, 20);
      await writeFile(join(dir, 'giant.png'), giant);
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--input', `input=${join(dir, 'giant.png')}`]),
        2,
        /giant\.png: input "input": the image is 100000x100000, larger than the whole input/,
      );
    });
  });

  it("never packs a payload from outside the manifest's directory", async () => {
    await inTempDir(async (dir) => {
      const unpacked = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', unpacked])).code, 0);
      const manifest = JSON.parse(await readFile(join(unpacked, 'manifest.json'), 'utf8')) as { blobs: { file?: string }[] };
      await writeFile(join(dir, 'outside.bin'), 'secret');
      await symlink(join(dir, 'outside.bin'), join(unpacked, 'link.bin'));
      const cases: [string, RegExp][] = [
        ['../outside.bin', /payload file "\.\.\/outside\.bin" points outside the manifest's directory/],
        [join(dir, 'outside.bin'), /payload file "[^"]+outside\.bin" is an absolute path/],
        ['link.bin', /payload file "link\.bin" is a symbolic link to a file outside the manifest's directory/],
      ];
      for (const [i, [file, message]] of cases.entries()) {
        const hostile = structuredClone(manifest);
        const first = hostile.blobs[0];
        assert.ok(first !== undefined);
        first.file = file;
        const path = join(unpacked, `hostile-${i}.json`);
        await writeFile(path, JSON.stringify(hostile));
        assertCleanError(await spawnPopef(['pack', path, '-o', join(dir, `out-${i}.popef`)]), 2, message);
      }
      assert.deepEqual((await readdir(dir)).sort(), ['outside.bin', 'u']);
    });
  });

  it('validate reports a config.pbtxt over its size limit as unreadable, without reading it', async () => {
    await inTempDir(async (dir) => {
      const model = join(dir, 'repo', 'm');
      await mkdir(join(model, '1'), { recursive: true });
      await copyFile(MNIST, join(model, '1', 'executable.popef'));
      await writeFile(join(model, '1', 'name_map.json'), '{}');
      const config = join(model, 'config.pbtxt');
      await writeFile(config, '');
      await truncate(config, 256 * 1024 ** 2 + 1); // sparse: one byte over the limit, nothing stored
      const run = await spawnPopef(['validate', join(dir, 'repo')]);
      assert.equal(run.code, 1, run.stderr);
      assert.match(
        run.stdout,
        /m\/config\.pbtxt: error: config\.pbtxt is 268435457 bytes or more, over the limit of 268435456 bytes; Triton cannot load model 'm' \[layout\/unreadable\]/,
      );
      assert.ok((run.maxRssMiB ?? 0) < 300, `peak RSS ${run.maxRssMiB ?? '?'} MiB`);
    });
  });

  it('validate reports an unreadable config or name map as a finding of that model, and goes on with the others', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      for (const model of ['a_fifo', 'b_device', 'c_map', 'd_good']) {
        await mkdir(join(repo, model, '1'), { recursive: true });
        await copyFile(MNIST, join(repo, model, '1', 'executable.popef'));
        await writeFile(join(repo, model, '1', 'name_map.json'), '{}');
        await writeFile(
          join(repo, model, 'config.pbtxt'),
          `name: "${model}"\nbackend: "poplar"\nmax_batch_size: 1\ninput [{ name: "input" data_type: TYPE_FP32 dims: [1, 28, 28] }]\noutput [{ name: "softmax/Softmax:0" data_type: TYPE_FP32 dims: [10] }]\n`,
        );
      }
      await rmFile(join(repo, 'a_fifo', 'config.pbtxt'));
      mkfifo(join(repo, 'a_fifo', 'config.pbtxt'));
      await rmFile(join(repo, 'b_device', 'config.pbtxt'));
      await symlink('/dev/zero', join(repo, 'b_device', 'config.pbtxt'));
      await rmFile(join(repo, 'c_map', '1', 'name_map.json'));
      mkfifo(join(repo, 'c_map', '1', 'name_map.json'));
      const run = await spawnPopef(['validate', repo, '--format', 'json']);
      assert.equal(run.hung, false);
      assert.equal(run.code, 1, run.stderr);
      const report = JSON.parse(run.stdout) as {
        repositories: { models: { name: string; findings: { rule: string; message: string; file?: string }[] }[] }[];
      };
      const models = new Map(report.repositories[0]?.models.map((m) => [m.name, m.findings]));
      const only = (name: string): { rule: string; message: string; file?: string } | undefined =>
        models.get(name)?.find((f) => f.rule === 'layout/unreadable');
      assert.match(
        only('a_fifo')?.message ?? '',
        /cannot read config\.pbtxt: it is a FIFO \(named pipe\), not a regular file; Triton cannot load model 'a_fifo'/,
      );
      assert.equal(only('a_fifo')?.file, 'a_fifo/config.pbtxt');
      // A link to /dev/zero leaves the repository: it is reported as such and never read (layout/link-outside).
      assert.match(
        models.get('b_device')?.find((f) => f.rule === 'layout/link-outside')?.message ?? '',
        /b_device\/config\.pbtxt is a symbolic link that leaves the model repository; it was not read/,
      );
      assert.match(only('c_map')?.message ?? '', /cannot read name_map\.json: it is a FIFO/);
      assert.equal(only('d_good'), undefined);
      assert.ok(models.has('d_good'));
    });
  });

  it('unpack says which model rule a file breaks, and pack then refuses the manifest with the same rule', async () => {
    await inTempDir(async (dir) => {
      for (const name of ['duplicate-executable', 'missing-executable', 'tensor-size-mismatch']) {
        const out = join(dir, name);
        const { runCli } = await import('../helpers.js');
        const unpacked = await runCli(['unpack', fixture(`malformed/${name}.popef`), '-o', out]);
        assert.equal(unpacked.code, 0, unpacked.stderr);
        assert.match(
          unpacked.stderr,
          /^popef: warning: .*manifest\.json#\/blobs\/\d+: .* \[E_MODEL\]\n {2}the file breaks a model rule \(FORMAT\.md section 8\): popef dump refuses it, and popef pack will refuse this manifest until it is fixed/,
        );
        const warned = /^popef: warning: (.*) \[E_MODEL\]$/m.exec(unpacked.stderr)?.[1];
        const packed = await runCli(['pack', join(out, 'manifest.json'), '-o', join(dir, `${name}.popef`)]);
        assert.equal(packed.code, 2);
        assert.equal(/^popef: error: (.*) \[E_MODEL\]$/m.exec(packed.stderr)?.[1], warned, 'pack refuses for the rule unpack named');
      }
    });
  });

  it('refuses to save two outputs into one file', () => {
    assert.throws(() => outputFileNames(['a/b', 'a_b']), /outputs "a\/b" and "a_b" would both be saved as a_b\.npy/);
    assert.throws(() => outputFileNames(['Out', 'out']), /outputs "Out" and "out" would both be saved as out\.npy/);
    assert.deepEqual([...outputFileNames(['x:0', 'y/1']).values()], ['x_0.npy', 'y_1.npy']);
  });
});

async function rmFile(path: string): Promise<void> {
  const { rm } = await import('node:fs/promises');
  await rm(path);
}
