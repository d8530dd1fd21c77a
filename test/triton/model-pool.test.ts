import assert from 'node:assert/strict';
import { cp, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { checkModel } from '../../src/triton/repository/model-check.js';
import {
  LARGE_REPOSITORY_MODELS,
  PARALLEL_THRESHOLD,
  checkModelsInParallel,
  defaultThreads,
  type PoolOutcome,
} from '../../src/triton/repository/model-pool.js';
import { validateRepository, validateRepositoryWith } from '../../src/triton/repository/validate.js';
import { FIXTURES, inTempDir } from '../helpers.js';

// validate's worker threads (src/triton/repository/model-pool.ts) must not
// change a report: the same findings, in the same order, for every model.

/**
 * Every fixture repository's model directories side by side in `repo`, `copies` times (renamed, so their
 * names are unique: the renaming adds config/name-mismatch findings, the same on every run).
 */
async function gatherFixtures(repo: string, copies = 1): Promise<void> {
  for (let copy = 0; copy < copies; copy++) {
    for (const fixture of await readdir(join(FIXTURES, 'repos'))) {
      const from = join(FIXTURES, 'repos', fixture);
      for (const entry of await readdir(from, { withFileTypes: true })) {
        if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
        await cp(join(from, entry.name), join(repo, `${fixture}__${entry.name}__${copy}`), { recursive: true, verbatimSymlinks: true });
      }
    }
  }
}

/** What the pool did in a run: set by PoolOptions.observe. */
function observer(): { observe: (o: PoolOutcome) => void; seen: () => PoolOutcome } {
  let outcome: PoolOutcome | undefined;
  return {
    observe: (o) => {
      outcome = o;
    },
    seen: () => {
      assert.ok(outcome !== undefined, 'the pool ran');
      return outcome;
    },
  };
}

describe('model pool: validate on several threads reports what one thread reports', () => {
  it('every fixture model, gathered in one repository, checked by 1 and by 3 threads', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'all');
      await gatherFixtures(repo);
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
      // The calling thread takes no part: these repositories are smaller than a chunk, which it would otherwise check before a worker is online.
      const { observe, seen } = observer();
      const byWorker = await validateRepositoryWith(repo, { threads: 2 }, { callerTakesPart: false, observe });
      assert.equal(seen().byWorkers, byWorker.models.length, `${fixture}: every model checked by the worker`);
      assert.ok(
        byWorker.models.some((m) => m.findings.length > 0 || m.config?.platform === 'ensemble'),
        fixture,
      );
      assert.deepEqual(byWorker, await validateRepository(repo, { threads: 1 }), fixture);
    }
  });

  it('a model whose PopEF needs the caller’s foreign reader is read on the calling thread, through that reader', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      // A PopEF that is not in the open layout: what the SDK writes.
      await cp(join(FIXTURES, 'repos', 'clean'), repo, { recursive: true });
      const models = await readdir(repo);
      for (const m of models) await writeFile(join(repo, m, '1', 'executable.popef'), 'not the open layout');
      const asked: string[][] = [];
      const { observe, seen } = observer();
      const report = await validateRepositoryWith(
        repo,
        {
          threads: 2,
          readForeignPopef: (paths) => {
            asked.push([...paths]);
            return Promise.resolve(undefined);
          },
        },
        { callerTakesPart: false, observe },
      );
      // The worker was sent every model and handed each back, as it cannot call the reader.
      assert.deepEqual({ byWorkers: seen().byWorkers, handedBack: seen().handedBack }, { byWorkers: 0, handedBack: models.length });
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

  it('a worker that dies mid-run leaves what it held to the calling thread: the report is a one-thread run’s', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'all');
      // More than four chunks of 32: the worker answers the first (or the first two), and dies when sent the third.
      await gatherFixtures(repo, 2);
      const dying = new URL('./dying-validate-worker.mjs', import.meta.url);
      let started = 0;
      const { observe, seen } = observer();
      const report = await validateRepositoryWith(
        repo,
        { threads: 2 },
        {
          callerTakesPart: false,
          observe,
          newWorker: () => {
            started += 1;
            return new Worker(dying, { workerData: { dieAtJob: 3 } });
          },
        },
      );
      assert.equal(started, 1);
      assert.ok(report.models.length > 128, `only ${report.models.length} models gathered`);
      assert.ok(seen().byWorkers >= 32 && seen().byWorkers <= 64, `the worker checked ${seen().byWorkers} models before it died`);
      assert.deepEqual(report, await validateRepository(repo, { threads: 1 }));
    });
  });

  it('a worker that cannot start leaves every model to the calling thread', async () => {
    const repo = join(FIXTURES, 'repos', 'ensemble');
    const { observe, seen } = observer();
    const report = await validateRepositoryWith(
      repo,
      { threads: 3 },
      {
        callerTakesPart: false,
        observe,
        newWorker: () => {
          throw new Error('no worker here');
        },
      },
    );
    assert.equal(seen().byWorkers, 0);
    assert.deepEqual(report, await validateRepository(repo, { threads: 1 }));
  });

  it('by default, workers for a repository of 256 models on 3 cores or more, and of 10,000 on 2', () => {
    assert.equal(defaultThreads(PARALLEL_THRESHOLD - 1, 8), 1);
    assert.equal(defaultThreads(PARALLEL_THRESHOLD, 4), 4);
    assert.equal(defaultThreads(LARGE_REPOSITORY_MODELS - 1, 2), 1);
    assert.equal(defaultThreads(LARGE_REPOSITORY_MODELS, 2), 2);
    assert.equal(defaultThreads(100_000, 2), 2);
    assert.equal(defaultThreads(100_000, 1), 1);
    // A caller that asks for more cores for its pool than a large repository needs gets 2 cores' pool too.
    assert.equal(defaultThreads(LARGE_REPOSITORY_MODELS, 2, 4), 2);
    assert.equal(defaultThreads(LARGE_REPOSITORY_MODELS - 1, 3, 4), 1);
  });
});
