import assert from 'node:assert/strict';
import { cp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkModel } from '../../src/triton/repository/model-check.js';
import { PARALLEL_THRESHOLD, checkModelsInParallel, defaultThreads } from '../../src/triton/repository/model-pool.js';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { FIXTURES, inTempDir } from '../helpers.js';

// validate's worker threads (src/triton/repository/model-pool.ts) must not
// change a report: the same findings, in the same order, for every model.

describe('model pool: validate on several threads reports what one thread reports', () => {
  it('every fixture model, gathered in one repository, checked by 1 and by 3 threads', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'all');
      // Every fixture repository's model directories side by side (renamed, so their names are unique: the
      // renaming adds config/name-mismatch findings, the same on both runs).
      for (const fixture of await readdir(join(FIXTURES, 'repos'))) {
        const from = join(FIXTURES, 'repos', fixture);
        for (const entry of await readdir(from, { withFileTypes: true })) {
          if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
          await cp(join(from, entry.name), join(repo, `${fixture}__${entry.name}`), { recursive: true, verbatimSymlinks: true });
        }
      }
      const one = await validateRepository(repo, { threads: 1 });
      const three = await validateRepository(repo, { threads: 3 });
      assert.ok(one.models.length > 60, `only ${one.models.length} models gathered`);
      // The workers did take part (a worker that cannot start leaves everything to the calling thread).
      const names = one.models.map((m) => m.name);
      const byWorkers = await checkModelsInParallel(repo, names, { threads: 3 }, checkModel, { callerTakesPart: false });
      const here = await checkModelsInParallel(repo, names, { threads: 1 }, checkModel);
      assert.equal(byWorkers.byWorkers, names.length);
      assert.equal(here.byWorkers, 0);
      const plain = (o: typeof here): unknown[] => o.checked.map((c) => ({ ...c, sink: c.sink.close() }));
      assert.deepEqual(plain(byWorkers), plain(here));
      assert.ok(
        one.models.some((m) => m.findings.length > 0),
        'the gathered fixtures have findings',
      );
      assert.deepEqual(three, one);
    });
  });

  it('an ensemble and its steps, checked on separate threads, give the ensemble rules their verdicts', async () => {
    for (const fixture of ['ensemble', 'ensemble-step-missing', 'ensemble-tensors']) {
      const repo = join(FIXTURES, 'repos', fixture);
      assert.deepEqual(await validateRepository(repo, { threads: 2 }), await validateRepository(repo, { threads: 1 }), fixture);
    }
  });

  it('a model whose PopEF needs the caller’s foreign reader is read on the calling thread, through that reader', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      // A PopEF that is not in the open layout: what the SDK writes.
      await cp(join(FIXTURES, 'repos', 'clean'), repo, { recursive: true });
      const models = await readdir(repo);
      const { writeFile } = await import('node:fs/promises');
      for (const m of models) await writeFile(join(repo, m, '1', 'executable.popef'), 'not the open layout');
      const asked: string[][] = [];
      const report = await validateRepository(repo, {
        threads: 2,
        readForeignPopef: (paths) => {
          asked.push([...paths]);
          return Promise.resolve(undefined);
        },
      });
      assert.deepEqual(
        asked.map((p) => p.map((f) => f.slice(repo.length + 1))),
        models.map((m) => [`${m}/1/executable.popef`]),
      );
      assert.deepEqual(
        report.models.map((m) => m.findings.map((f) => f.rule)),
        models.map(() => ['popef/not-cross-checked']),
      );
    });
  });

  it('by default, workers only for a large repository on a machine of 3 cores or more', () => {
    assert.equal(defaultThreads(PARALLEL_THRESHOLD - 1, 8), 1);
    assert.equal(defaultThreads(100_000, 2), 1);
    assert.equal(defaultThreads(100_000, 1), 1);
    assert.equal(defaultThreads(PARALLEL_THRESHOLD, 4), 4);
  });
});
