/**
 * popef validate over a generated repository of 1,000 models (config,
 * name map and a small PopEF each), in a child process, with wall time and
 * peak RSS. Prints figures only. Run after npm run build:
 *   npx tsx test/bench/validate.ts
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-validate-'));
try {
  const repo = join(dir, 'repo');
  const template = join(dir, 'template');
  const s = spawnSync(process.execPath, [
    join(ROOT, 'bin/popef.cjs'),
    'scaffold',
    join(ROOT, 'fixtures/mnist/executable.popef'),
    '-r',
    template,
    '-m',
    'mnist',
    '--name',
    'input=digit_image',
    '--name',
    'softmax/Softmax:0=output_labels',
  ]);
  if (s.status !== 0) throw new Error(s.stderr.toString());
  const config = await readFile(join(template, 'mnist/config.pbtxt'), 'utf8');
  for (let i = 0; i < 1000; i++) {
    const model = `model_${String(i).padStart(4, '0')}`;
    await mkdir(join(repo, model, '1'), { recursive: true });
    await writeFile(join(repo, model, 'config.pbtxt'), config.replace('name: "mnist"', `name: "${model}"`));
    await copyFile(join(template, 'mnist/1/name_map.json'), join(repo, model, '1/name_map.json'));
    await copyFile(join(template, 'mnist/1/executable.popef'), join(repo, model, '1/executable.popef'));
  }
  const rssFile = join(dir, 'rss.txt');
  const times: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(
      process.execPath,
      ['--import', join(ROOT, 'test/bench/max-rss.mjs'), join(ROOT, 'bin/popef.cjs'), 'validate', repo, '--format', 'json'],
      {
        env: { ...process.env, BENCH_RSS_FILE: rssFile },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (r.status !== 0) throw new Error(`validate found problems: ${r.stdout.toString().slice(0, 500)}`);
  }
  const rss = (await readFile(rssFile, 'utf8')).split('\n').filter(Boolean).map(Number);
  times.sort((a, b) => a - b);
  console.log(
    `popef validate, 1000 models: median ${(times[2] ?? 0).toFixed(0)} ms wall (target < 2000), peak RSS ${(Math.max(...rss) / 1024).toFixed(1)} MiB (target < 200)`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
