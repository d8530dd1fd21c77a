/**
 * popef validate of a model whose name_map.json holds 1,000,000 keys (the
 * worst case: each maps to a name the config lacks, so each is a finding).
 * Target: under 5 s. Prints figures only. Run: npx tsx test/bench/name-map.ts [KEYS]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { validateRepository } from '../../src/triton/repository/validate.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const keys = Number(process.argv[2] ?? 1_000_000);
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-name-map-'));
try {
  const silent = {
    stdout: () => undefined,
    stderr: () => undefined,
    stdoutIsTTY: false,
    stderrIsTTY: false,
    env: {},
    cwd: dir,
    signal: new AbortController().signal,
  };
  await main(
    [
      'scaffold',
      join(ROOT, 'fixtures/mnist/executable.popef'),
      '-r',
      join(dir, 'models'),
      '-m',
      'mnist',
      '--name',
      'input=digit_image',
      '--name',
      'softmax/Softmax:0=output_labels',
    ],
    silent,
  );
  const lines = ['{', '  "input": "digit_image",', '  "softmax/Softmax:0": "output_labels"'];
  for (let i = 0; i < keys; i++) lines.push(`,  "extra_${i}": "name_${i}"`);
  lines.push('}');
  await writeFile(join(dir, 'models/mnist/1/name_map.json'), `${lines.join('\n')}\n`);
  const t0 = performance.now();
  const report = await validateRepository(join(dir, 'models'));
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `validate, name_map.json of ${keys} keys: ${seconds.toFixed(2)} s (target < 5 s), ${report.models[0]?.findings.length ?? 0} findings, RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
