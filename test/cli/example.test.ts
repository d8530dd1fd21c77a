// popef example: the walkthrough's files, from the package's own copies, in
// one atomic write that replaces nothing without --force.
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

const IMAGES = Array.from({ length: 10 }, (_, n) => `${n}.png`);

describe('popef example', () => {
  it('mnist: writes the model, the ten images and the client, byte for byte, and lists them', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['example', 'mnist', 'demo'], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      const written = ['executable.popef', ...IMAGES.map((i) => `img/${i}`), 'mnist_client.py', 'requirements.txt'];
      // The ten images are one line: where they went, first and last.
      assert.equal(
        r.stdout,
        'wrote the mnist example:\n' +
          '  demo/executable.popef\n  demo/img/0.png ... demo/img/9.png (10 files)\n  demo/mnist_client.py\n  demo/requirements.txt\n' +
          'next, in demo: popef dump --user-anchors executable.popef\n',
      );
      for (const w of written) assert.ok(existsSync(join(dir, 'demo', w)), w);
      assert.deepEqual((await readdir(join(dir, 'demo/img'))).sort(), IMAGES);
      const sources: Record<string, string> = {
        'executable.popef': fixture('mnist/executable.popef'),
        ...Object.fromEntries(IMAGES.map((i) => [`img/${i}`, fixture(`mnist/img/${i}`)])),
        'mnist_client.py': join(ROOT, 'src/examples/mnist/mnist_client.py'),
        'requirements.txt': join(ROOT, 'src/examples/mnist/requirements.txt'),
      };
      for (const [to, from] of Object.entries(sources)) assert.ok((await readFile(join(dir, 'demo', to))).equals(await readFile(from)), to);
    });
  });

  it('refuses to replace a file without --force, and writes nothing then', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'mnist_client.py'), 'mine\n');
      const r = await runCli(['example', 'mnist', '.'], { cwd: dir });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^popef: error: .*mnist_client\.py: file already exists \[E_EXISTS\]\n {2}hint: use --force to replace it/);
      assert.deepEqual((await readdir(dir)).sort(), ['mnist_client.py']);
      assert.equal(await readFile(join(dir, 'mnist_client.py'), 'utf8'), 'mine\n');
      const forced = await runCli(['example', 'mnist', '.', '--force'], { cwd: dir });
      assert.equal(forced.code, 0, forced.stderr);
      assert.ok((await readFile(join(dir, 'mnist_client.py'))).equals(await readFile(join(ROOT, 'src/examples/mnist/mnist_client.py'))));
    });
  });

  it('names the examples there are when asked for another', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['example', 'resnet', 'out'], { cwd: dir });
      assert.equal(r.code, 2);
      assert.equal(r.stderr, 'popef: error: no example named "resnet" [E_USAGE]\n  hint: the examples are: mnist\n');
      assert.deepEqual(await readdir(dir), []);
    });
  });
});
