// The metrics service in-process (no Python): prom-client loads at the first
// scrape, not at start-up; the counters follow the requests served; the
// /proc readers take what Triton's metrics.cc takes. The comparison with the
// real tritonserver's families is in tritonclient.test.ts.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadPlugin } from '../../src/run/load-plugin.js';
import { cpuTicks, memoryBytes } from '../../src/serve/metrics.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { ROOT, tempDir } from '../helpers.js';
import { scaffoldMnist } from './serving.js';

const promClientLoaded = (): boolean =>
  Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes(join('node_modules', 'prom-client')));

describe('popef serve metrics', () => {
  let server: RunningServer;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    const repo = await scaffoldMnist(temp.dir);
    server = await startServer({
      repositories: [repo],
      createPlugin: () => loadPlugin('cpu', { cwd: ROOT, env: {} }),
      host: '127.0.0.1',
      httpPort: 0,
      metricsPort: 0,
      maxRequestSize: 1 << 20,
    });
  });

  after(async () => {
    await server.stop();
    await cleanup();
  });

  it('loads prom-client at the first scrape; counts each success; other paths and methods as Triton', async () => {
    assert.equal(promClientLoaded(), false);
    const metrics = `http://127.0.0.1:${server.metricsPort ?? 0}`;
    const count = async (): Promise<number> =>
      Number(/^nv_inference_request_success\{model="mnist",version="1"\} (\d+)$/m.exec(await (await fetch(`${metrics}/metrics`)).text())?.[1]);
    const before = await count();
    assert.equal(promClientLoaded(), true);
    const body = JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data: new Array<number>(784).fill(0) }] });
    for (let i = 0; i < 3; i++)
      assert.equal((await fetch(`http://127.0.0.1:${server.httpPort ?? 0}/v2/models/mnist/infer`, { method: 'POST', body })).status, 200);
    assert.equal((await count()) - before, 3);
    const other = await fetch(`${metrics}/other`);
    assert.deepEqual([other.status, await other.text()], [200, '']);
    assert.equal((await fetch(`${metrics}/metrics`, { method: 'POST' })).status, 405);
  });
});

describe('the /proc readers of the CPU and memory gauges', () => {
  it('take busy and idle ticks from the aggregate cpu line', () => {
    assert.deepEqual(cpuTicks('cpu  10 2 3 100 5 1 1 4 0 0\ncpu0 1 1 1 1 1 1 1 1\n'), { busy: 10 + 2 + 3 + 1 + 1 + 4, idle: 105 });
    assert.equal(cpuTicks('intr 1 2 3\n'), undefined);
  });

  it('take MemTotal and MemTotal - MemAvailable, in bytes', () => {
    assert.deepEqual(memoryBytes('MemTotal:       1000 kB\nMemFree:  10 kB\nMemAvailable:    250 kB\n'), { total: 1024000, used: 768000 });
    assert.equal(memoryBytes('MemTotal: 10 kB\nMemAvailable: 20 kB\n'), undefined);
  });
});
