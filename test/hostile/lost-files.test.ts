import assert from 'node:assert/strict';
import { cp, mkdir, readFile, readdir, rename, stat, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir } from '../helpers.js';
import { assertCleanError, spawnPopef } from './spawn-popef.js';

/**
 * Commands that replace what is already there (--force) must replace only
 * what they wrote themselves, and never the file they are reading.
 */

const MNIST = fixture('mnist/executable.popef');

describe('--force never loses a user file', () => {
  it('unpack --force refuses a web app with its own manifest.json, naming what is in the way', async () => {
    await inTempDir(async (dir) => {
      const w = join(dir, 'w');
      await mkdir(join(w, 'src'), { recursive: true });
      await writeFile(join(w, 'manifest.json'), '{"name":"pwa"}\n');
      await writeFile(join(w, 'src/app.js'), 'code\n');
      await writeFile(join(w, 'NOTES.md'), 'n\n');
      const run = await spawnPopef(['unpack', MNIST, '-o', w, '--force']);
      assertCleanError(run, 2, /its manifest\.json is not a popef manifest; --force replaces only an earlier unpack \[E_EXISTS\]/);
      assert.equal(await readFile(join(w, 'src/app.js'), 'utf8'), 'code\n');
      assert.equal(await readFile(join(w, 'NOTES.md'), 'utf8'), 'n\n');
      assert.deepEqual((await readdir(dir)).sort(), ['w']);
    });
  });

  it('unpack --force refuses an earlier unpack that has gained a file, naming it', async () => {
    await inTempDir(async (dir) => {
      const u = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', u])).code, 0);
      await writeFile(join(u, 'NOTES.md'), 'mine\n');
      assertCleanError(
        await spawnPopef(['unpack', MNIST, '-o', u, '--force']),
        2,
        /holds a file its manifest does not list \("NOTES\.md"\); --force replaces only an earlier unpack/,
      );
      assert.equal(await readFile(join(u, 'NOTES.md'), 'utf8'), 'mine\n');
      // Without the extra file the earlier unpack is replaced.
      const { rm } = await import('node:fs/promises');
      await rm(join(u, 'NOTES.md'));
      const again = await spawnPopef(['unpack', MNIST, '-o', u, '--force']);
      assert.equal(again.code, 0, again.stderr);
    });
  });

  it('unpack -o . --force inside an earlier unpack refuses to delete the working directory', async () => {
    await inTempDir(async (dir) => {
      const u = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', u])).code, 0);
      const before = (await readdir(u)).sort();
      assertCleanError(
        await spawnPopef(['unpack', MNIST, '-o', '.', '--force'], { cwd: u }),
        2,
        /the output directory is the working directory .*leave the shell in a deleted directory \[E_EXISTS\]/,
      );
      assertCleanError(await spawnPopef(['unpack', MNIST, '-o', '..', '--force'], { cwd: u }), 2, /is the working directory \(or holds it\)/);
      assert.deepEqual((await readdir(u)).sort(), before);
    });
  });

  it('pack m.json -o m.json --force refuses to overwrite its own manifest', async () => {
    await inTempDir(async (dir) => {
      const u = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', u])).code, 0);
      const manifest = await readFile(join(u, 'manifest.json'), 'utf8');
      assertCleanError(
        await spawnPopef(['pack', join(u, 'manifest.json'), '-o', join(u, 'manifest.json'), '--force']),
        2,
        /the output is the manifest this pack reads; writing it would destroy its own input \[E_EXISTS\]/,
      );
      assert.equal(await readFile(join(u, 'manifest.json'), 'utf8'), manifest);
    });
  });

  it('pack -o one of its payload files --force refuses to overwrite it', async () => {
    await inTempDir(async (dir) => {
      const u = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', u])).code, 0);
      const payload = (await readdir(u)).find((name) => name.endsWith('.bin'));
      assert.ok(payload !== undefined);
      const bytes = await readFile(join(u, payload));
      assertCleanError(
        await spawnPopef(['pack', 'manifest.json', '-o', payload, '--force'], { cwd: u }),
        2,
        new RegExp(`the output is payload file "${payload.replace('.', '\\.')}" this pack reads`),
      );
      assert.deepEqual(await readFile(join(u, payload)), bytes);
    });
  });
});

describe('scaffold: killed, linked, re-run', () => {
  const host = hostname().replace(/[^A-Za-z0-9]/g, '_');
  // A PID above the kernel's limit (2^22): the process that left it is surely gone.
  const deadStaging = (repo: string, model: string): string => join(repo, `.${model}.popef-staging-${host}-${2 ** 22 + 7}-0000000000ab`);

  /** The state a scaffold --force leaves when SIGKILLed after moving config.pbtxt aside, before moving the new one in. */
  async function killedAfterConfigMovedAside(repo: string): Promise<{ oldConfig: string; newConfig: string }> {
    assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
    const staging = deadStaging(repo, 'mnist');
    await cp(join(repo, 'mnist'), staging, { recursive: true });
    const oldConfig = await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8');
    const newConfig = `# the new one\n${oldConfig}`;
    await writeFile(join(staging, 'config.pbtxt'), newConfig);
    await writeFile(join(staging, '1/marker'), 'new');
    await writeFile(join(staging, '.popef-ready'), '');
    await rename(join(repo, 'mnist/config.pbtxt'), `${staging}.old-config.pbtxt`);
    return { oldConfig, newConfig };
  }

  it('scaffold --force killed mid-swap: a plain re-run finishes it (new config and version, nothing left beside)', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      const { newConfig } = await killedAfterConfigMovedAside(repo);
      const rerun = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist']);
      assert.match(rerun.stderr, /popef: note: .*mnist: finished an interrupted scaffold \(moved in (1 and config\.pbtxt|config\.pbtxt and 1)\)/);
      // The finished model now exists, so a run without --force refuses to replace it, as always.
      assert.match(rerun.stderr, /already exist/);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist']);
      assert.equal(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8'), newConfig);
      assert.equal(await readFile(join(repo, 'mnist/1/marker'), 'utf8'), 'new');
      assert.equal((await spawnPopef(['validate', repo])).code, 0);
    });
  });

  it('scaffold --force killed mid-swap: re-run with --force ends with one whole model', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      const { newConfig } = await killedAfterConfigMovedAside(repo);
      const rerun = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--force']);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist']);
      assert.deepEqual((await readdir(join(repo, 'mnist'))).sort(), ['1', 'config.pbtxt']);
      // The finished scaffold's config (a comment added) already describes MNIST: --force replaces only the version.
      assert.equal(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8'), newConfig);
      assert.equal(await readFile(join(repo, 'mnist/1/marker'), 'utf8').catch(() => 'replaced'), 'replaced');
      assert.equal((await spawnPopef(['validate', repo])).code, 0);
    });
  });

  it('scaffold --force killed mid-swap: a re-run adding version 2 finishes it, then adds 2 beside 1 keeping that config', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      const { newConfig } = await killedAfterConfigMovedAside(repo);
      const rerun = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--version', '2']);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.match(rerun.stderr, /popef: note: .*mnist: finished an interrupted scaffold/);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist']);
      assert.deepEqual((await readdir(join(repo, 'mnist'))).sort(), ['1', '2', 'config.pbtxt']);
      assert.equal(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8'), newConfig);
      assert.equal(await readFile(join(repo, 'mnist/1/marker'), 'utf8'), 'new');
      assert.equal((await spawnPopef(['validate', repo])).code, 0);
    });
  });

  it('a killed run adding version 2 (staged, config kept) is finished or undone by the next, and config.pbtxt is never touched', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      const before = { bytes: await readFile(config), ino: (await stat(config)).ino };
      // Killed after staging all of version 2 (marker written), before moving it in: only 2/ is staged, as the config is kept.
      const ready = deadStaging(repo, 'mnist');
      await cp(join(repo, 'mnist/1'), join(ready, '2'), { recursive: true });
      await writeFile(join(ready, '.popef-ready'), '');
      const finished = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--version', '3']);
      assert.equal(finished.code, 0, finished.stderr);
      assert.match(finished.stderr, /finished an interrupted scaffold \(moved in 2\)/);
      assert.deepEqual((await readdir(join(repo, 'mnist'))).sort(), ['1', '2', '3', 'config.pbtxt']);
      // Killed while staging version 4 (no marker): the next run removes it and adds 4 itself.
      const partial = deadStaging(repo, 'mnist');
      await mkdir(join(partial, '4'), { recursive: true });
      await writeFile(join(partial, '4/executable.popef'), 'half');
      const undone = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--version', '4']);
      assert.equal(undone.code, 0, undone.stderr);
      assert.ok((await readFile(join(repo, 'mnist/4/executable.popef'))).equals(await readFile(MNIST)));
      assert.deepEqual((await readdir(repo)).sort(), ['mnist'], 'nothing left beside the model');
      assert.deepEqual({ bytes: await readFile(config), ino: (await stat(config)).ino }, before);
      assert.equal((await spawnPopef(['validate', repo])).code, 0);
    });
  });

  it('scaffold into a model directory that is a symlink leaving the repository is refused, nothing written there', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      await mkdir(join(dir, 'elsewhere'));
      await mkdir(repo);
      await symlink(join(dir, 'elsewhere'), join(repo, 'mnist'));
      assertCleanError(
        await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist']),
        2,
        /the model directory is a symbolic link that leaves the repository \(to .*elsewhere\); scaffold writes only inside the repository/,
      );
      assertCleanError(await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--force']), 2, /leaves the repository/);
      assert.deepEqual(await readdir(join(dir, 'elsewhere')), []);
      assert.deepEqual(await readdir(repo), ['mnist']);
    });
  });
});

describe('validate: links and what is read', () => {
  it('a name_map.json symlink to /etc/shadow is a finding of its own, nothing of the target quoted (sarif)', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'r');
      assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'm'])).code, 0);
      const secret = join(dir, 'secret.json');
      await writeFile(secret, '{"SECRET_TOKEN": "hunter2"}');
      const { rm } = await import('node:fs/promises');
      await rm(join(repo, 'm/1/name_map.json'));
      await symlink(secret, join(repo, 'm/1/name_map.json'));
      await writeFile(join(dir, 'env'), 'AWS_SECRET_ACCESS_KEY=abc\n');
      await rm(join(repo, 'm/config.pbtxt'));
      await symlink(join(dir, 'env'), join(repo, 'm/config.pbtxt'));
      const run = await spawnPopef(['validate', repo, '--format', 'sarif']);
      assert.equal(run.code, 1, run.stderr);
      assert.ok(!/SECRET_TOKEN|hunter2|AWS_SECRET_ACCESS_KEY/.test(run.stdout + run.stderr), run.stdout);
      assert.match(run.stdout, /m\/1\/name_map\.json is a symbolic link that leaves the model repository; it was not read/);
      assert.match(run.stdout, /m\/config\.pbtxt is a symbolic link that leaves the model repository; it was not read/);
      assert.match(run.stdout, /layout\/link-outside/);
    });
  });

  it('a model or version directory that is a symlink loop (ELOOP) is reported, not skipped', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'r');
      assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'm'])).code, 0);
      await symlink('loop', join(repo, 'loop'));
      await symlink('2', join(repo, 'm/2'));
      const run = await spawnPopef(['validate', repo]);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(run.stdout, /loop is a symbolic link loop \(ELOOP\): Triton cannot open it as a model directory/);
      assert.match(run.stdout, /m\/2 is a symbolic link loop \(ELOOP\): Triton cannot open it as a version directory/);
    });
  });

  it('validate after a scaffold --force killed mid-swap says where the config went and what to run', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
      const aside = `.mnist.popef-staging-${hostname().replace(/[^A-Za-z0-9]/g, '_')}-${2 ** 22 + 9}-0000000000cd.old-config.pbtxt`;
      await rename(join(repo, 'mnist/config.pbtxt'), join(repo, aside));
      const run = await spawnPopef(['validate', repo]);
      assert.equal(run.code, 1);
      assert.ok(run.stdout.includes(`an interrupted popef scaffold --force moved it to ${aside} in the repository`), run.stdout);
      assert.match(run.stdout, /run popef scaffold again for model mnist \(it finishes or undoes the interrupted one\)/);
    });
  });
});
