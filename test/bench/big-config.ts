/**
 * popef validate of a repository whose one config.pbtxt is about 50 MB, in
 * two shapes: many inputs and outputs, and one input with a dims list of
 * millions of entries. Each run in its own process: wall time and peak RSS.
 * Targets (issue 13): < 10 s and < 1 GiB. Prints figures only.
 * Run: npm run build && npx tsx test/bench/big-config.ts [MB]
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const megabytes = Number(process.argv[2] ?? 50);
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-config-'));

function manyTensors(bytes: number): string {
  const parts = ['name: "big"\nbackend: "poplar"\nmax_batch_size: 1\n'];
  let size = parts[0]?.length ?? 0;
  for (let i = 0; size < bytes; i++) {
    const entry = `input {\n  name: "input_${i}"\n  data_type: TYPE_FP32\n  dims: [ 1, 28, 28 ]\n}\noutput {\n  name: "output_${i}"\n  data_type: TYPE_FP32\n  dims: [ 10 ]\n}\n`;
    parts.push(entry);
    size += entry.length;
  }
  return parts.join('');
}

function longDims(bytes: number): string {
  const head = 'name: "big"\nbackend: "poplar"\nmax_batch_size: 1\ninput {\n  name: "input"\n  data_type: TYPE_FP32\n  dims: [ ';
  const dims: string[] = [];
  let size = head.length;
  while (size < bytes) {
    dims.push('1');
    size += 3;
  }
  return `${head}${dims.join(', ')} ]\n}\noutput {\n  name: "softmax/Softmax:0"\n  data_type: TYPE_FP32\n  dims: [ 10 ]\n}\n`;
}

try {
  for (const [label, text] of [
    ['many inputs and outputs', manyTensors(megabytes * 1e6)],
    ['one dims list', longDims(megabytes * 1e6)],
  ] as const) {
    const repo = join(dir, label.replace(/\W+/g, '-'));
    await mkdir(join(repo, 'big', '1'), { recursive: true });
    await copyFile(join(ROOT, 'fixtures/mnist/executable.popef'), join(repo, 'big', '1', 'executable.popef'));
    await writeFile(join(repo, 'big', '1', 'name_map.json'), '{}');
    await writeFile(join(repo, 'big', 'config.pbtxt'), text);
    const size = (await stat(join(repo, 'big', 'config.pbtxt'))).size;
    const rssFile = join(dir, 'rss');
    const t0 = performance.now();
    const r = spawnSync(
      process.execPath,
      ['--import', join(ROOT, 'test/bench/max-rss.mjs'), join(ROOT, 'bin/popef.cjs'), 'validate', repo, '--format', 'json'],
      {
        env: { ...process.env, BENCH_RSS_FILE: rssFile },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const seconds = (performance.now() - t0) / 1000;
    const kib = Number((await readFile(rssFile, 'utf8').catch(() => '')).trim().split('\n').pop());
    await rm(rssFile, { force: true });
    console.log(
      `validate, ${label}: config.pbtxt of ${(size / 1e6).toFixed(1)} MB: ${seconds.toFixed(2)} s, peak RSS ${(kib / 1024).toFixed(0)} MiB, exit ${r.status ?? r.signal ?? '?'} (targets < 10 s, < 1024 MiB)`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
