import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, cp } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { RepositoryReport } from '../../src/triton/repository/validate.js';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { FIXTURES, ROOT, inTempDir } from '../helpers.js';

// A model directory that cannot be listed (mode 000) is that model's
// problem: Triton fails it and loads the others, and validate gives it
// layout/unreadable and the others their own findings.
//
// Root lists a mode-000 directory all the same (CAP_DAC_OVERRIDE), and these
// tests run as root here: validate then runs in a child process as the
// user nobody, for whom the mode holds.

const NOBODY = 65534;

/** validateRepository(repo) in a child process, as nobody when this process is root. */
function validateAsUnprivileged(repo: string): RepositoryReport {
  const script = `const { validateRepository } = await import(${JSON.stringify(join(ROOT, 'src/triton/repository/validate.ts'))});
process.stdout.write(JSON.stringify(await validateRepository(${JSON.stringify(repo)}, { threads: 1 })));`;
  const asRoot = process.getuid?.() === 0;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    // tsx keeps its cache under the temporary directory, per user.
    env: { ...process.env, HOME: '/tmp' },
  });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout) as RepositoryReport;
}

describe('validate: a model directory that cannot be listed', () => {
  it('gives that model layout/unreadable and the other models their own findings', async () => {
    await inTempDir(async (dir) => {
      // mkdtemp's directory is 0700: the unprivileged child must be able to walk to the repository.
      await chmod(dir, 0o755);
      const repo = join(dir, 'repo');
      await cp(join(FIXTURES, 'repos', 'clean', 'mnist'), join(repo, 'a_clean'), { recursive: true });
      await cp(join(FIXTURES, 'repos', 'clean', 'mnist'), join(repo, 'b_unlisted'), { recursive: true });
      await cp(join(FIXTURES, 'repos', 'name-map-missing', 'mnist'), join(repo, 'c_no_map'), { recursive: true });
      // What the other models get when every directory can be read (the copies' names add config/name-mismatch).
      const readable = await validateRepository(repo, { threads: 1 });
      await chmod(join(repo, 'b_unlisted'), 0);
      try {
        const report = validateAsUnprivileged(repo);
        const byName = new Map(report.models.map((m) => [m.name, m]));
        assert.deepEqual([...byName.keys()], ['a_clean', 'b_unlisted', 'c_no_map']);
        const unlisted = byName.get('b_unlisted')?.findings ?? [];
        assert.deepEqual(
          unlisted.map((f) => [f.rule, f.severity]),
          [['layout/unreadable', 'error']],
        );
        // Triton opens the config first, so that is the read the finding names.
        assert.equal(unlisted[0]?.message, "cannot open config.pbtxt: EACCES; Triton cannot load model 'b_unlisted'");
        assert.equal(unlisted[0].file, 'b_unlisted/config.pbtxt');
        for (const name of ['a_clean', 'c_no_map']) {
          assert.deepEqual(byName.get(name)?.findings, readable.models.find((m) => m.name === name)?.findings, name);
        }
        assert.ok((byName.get('c_no_map')?.findings.length ?? 0) > 0, 'the model without a name map has its findings');
      } finally {
        // Removable again by the temporary directory's clean-up, whoever runs it.
        await chmod(join(repo, 'b_unlisted'), 0o755);
      }
    });
  });
});
