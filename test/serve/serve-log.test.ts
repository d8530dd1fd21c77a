// popef serve writes the log records its log settings allow, in the format
// they name, to the file they name: the settings /v2/logging reports are
// the ones it follows, and changing them changes what it writes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, tempDir } from '../helpers.js';
import { scaffoldMnist, serveCli, type Serving } from './serving.js';

describe('popef serve honours its log settings', () => {
  let server: Serving;
  let logFile: string;
  let repo: string;
  let cleanup: () => Promise<void>;
  let base: string;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    repo = await scaffoldMnist(temp.dir);
    logFile = join(temp.dir, 'serve.log');
    server = await serveCli(repo, ['--log-file', logFile, '--log-format', 'ISO8601', '--model-control-mode', 'explicit', '--load-model', 'mnist']);
    base = `http://127.0.0.1:${server.http}`;
  });

  after(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
    await cleanup();
  });

  const settings = async (change?: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const res = await fetch(`${base}/v2/logging`, change === undefined ? {} : { method: 'POST', body: JSON.stringify(change) });
    assert.equal(res.status, 200);
    return (await res.json()) as Record<string, unknown>;
  };
  /** The records written since `from` (a length of the file). */
  const recordsSince = async (from: number): Promise<string[]> =>
    (await readFile(logFile, 'utf8'))
      .slice(from)
      .split('\n')
      .filter((l) => l !== '');
  const fileLength = async (): Promise<number> => (await readFile(logFile, 'utf8')).length;

  it('reports the options it was started with, and writes the start-up records to the file in ISO8601', async () => {
    assert.deepEqual(await settings(), {
      log_file: logFile,
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: 'ISO8601',
    });
    const records = await recordsSince(0);
    assert.ok(
      records.some((r) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I popef serve: model 'mnist' version 1: READY$/.test(r)),
      records.join('\n'),
    );
    // Records go to the file alone; the ready line is the command's own and stays on stderr.
    assert.doesNotMatch(server.stderr(), /model 'mnist' version 1: READY/);
    assert.match(server.stderr(), /popef serve: ready: /);
  });

  it('writes one record per request at verbose level 1, none at 0, in the format asked for', async () => {
    let from = await fileLength();
    await (await fetch(`${base}/v2/health/ready`)).text();
    assert.deepEqual(await recordsSince(from), []);
    await settings({ log_verbose_level: 1 });
    from = await fileLength();
    await (await fetch(`${base}/v2/models/nosuch`)).text();
    const [record, ...rest] = await recordsSince(from);
    assert.match(
      record ?? '',
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ V popef serve: http GET \/v2\/models\/nosuch model 'nosuch': 404 in [\d.]+ ms: Request for unknown model: 'nosuch' is not found$/,
    );
    assert.deepEqual(rest, []);
    await settings({ log_format: 'default' });
    from = await fileLength();
    await (await fetch(`${base}/v2/health/live`)).text();
    assert.match((await recordsSince(from))[0] ?? '', /^popef serve: http GET \/v2\/health\/live: 200 in [\d.]+ ms$/);
    await settings({ log_verbose_level: 0 });
    from = await fileLength();
    await (await fetch(`${base}/v2/health/live`)).text();
    assert.deepEqual(await recordsSince(from), []);
  });

  it('writes no informational record with log_info off, and writes it again once on', async () => {
    const load = async (): Promise<void> => {
      const res = await fetch(`${base}/v2/repository/models/mnist/load`, { method: 'POST' });
      assert.equal(res.status, 200, await res.text());
    };
    await settings({ log_info: false });
    let from = await fileLength();
    await load();
    assert.deepEqual(await recordsSince(from), []);
    await settings({ log_info: true });
    from = await fileLength();
    await load();
    assert.deepEqual(await recordsSince(from), ["popef serve: model 'mnist' version 1: READY"]);
  });

  it('refuses a log file it cannot open, before serving, with exit 2', () => {
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'bin/popef.cjs'),
        'serve',
        repo,
        '--http-port',
        '0',
        '--grpc-port',
        '0',
        '--metrics-port',
        '0',
        '--log-file',
        join(repo, 'no', 'such', 'x.log'),
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /cannot open the log file .*x\.log: ENOENT/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });
});

describe('popef serve given a model directory for its repository', () => {
  it('logs why nothing is served, naming the repository to serve instead', async () => {
    const temp = await tempDir();
    try {
      const repo = await scaffoldMnist(temp.dir);
      const server = await serveCli(join(repo, 'mnist'));
      try {
        assert.match(
          server.stderr(),
          /^popef serve: repository '[^']*mnist': mnist holds config\.pbtxt: it is a model directory, not a model repository, so its version directories are read as models; give the repository that holds it: [^\n]*$/m,
        );
        // The repository named is the one that holds the model directory, and no other command is suggested.
        assert.ok(server.stderr().includes(`holds it: ${basename(repo)} (the directory passed to tritonserver --model-repository)`), server.stderr());
        assert.doesNotMatch(server.stderr(), /popef validate/);
        assert.match(server.stderr(), /ready: 0 of 1 models/);
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    } finally {
      await temp.cleanup();
    }
  });
});

describe('popef serve on a model whose PopEF it cannot read', () => {
  it("logs the error's hint beside Triton's reason (popef import for an SDK-written file)", async () => {
    const temp = await tempDir();
    try {
      const repo = await scaffoldMnist(temp.dir);
      // Bytes that are not the open layout, as an SDK-written export's are not.
      await writeFile(join(repo, 'mnist/1/executable.popef'), Buffer.alloc(4096, 0xa5));
      const server = await serveCli(repo);
      try {
        assert.match(
          server.stderr(),
          /^popef serve: model 'mnist': UNAVAILABLE: failed to load 'mnist': not a PopEF open-layout file: the blob signature is missing; hint: if the Poplar SDK wrote it, convert it on a machine with the SDK: popef import FILE -o FILE\.open\.popef/m,
        );
        // The repository index keeps the reason alone, as Triton gives it.
        const index = (await (await fetch(`http://127.0.0.1:${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as {
          reason: string;
        }[];
        assert.doesNotMatch(index[0]?.reason ?? '', /hint/);
        // The model is listed with a reason (else the line above would pass on nothing).
        assert.ok(index.length === 1 && typeof index[0]?.reason === 'string' && index[0].reason !== '', JSON.stringify(index));
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    } finally {
      await temp.cleanup();
    }
  });
});
