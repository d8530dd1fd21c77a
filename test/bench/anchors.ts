/**
 * popef dump and popef config of a model with very many anchors (default
 * 1,000,000, the documented limit): each command in its own process, wall
 * time and peak RSS. Targets (issue 13): each < 10 s and < 1 GiB.
 * Prints figures only. Run: npm run build && npx tsx test/bench/anchors.ts [ANCHORS]
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PopefWriter } from '../../src/format/writer.js';
import { emptyMetadata, type Anchor } from '../../src/schema/model.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const count = Number(process.argv[2] ?? 1_000_000);
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-anchors-'));
try {
  const path = join(dir, 'many.popef');
  const anchors: Anchor[] = [];
  // Names in the style of a PopART export: one input and one output, the rest weights.
  for (let i = 0; i < count; i++) {
    const type = i === 0 ? 'INPUT' : i === 1 ? 'OUTPUT' : 'UNKNOWN';
    anchors.push({
      name: `layer_${i}/weight`,
      handle: type === 'INPUT' ? `h2d_layer_${i}` : type === 'OUTPUT' ? `anchor_d2h_layer_${i}` : '',
      tensorInfo: { dtype: 'F32', shape: [1, 128] },
      isPerReplica: false,
      type,
      programs: type === 'UNKNOWN' ? [] : [5],
    });
  }
  const w = await PopefWriter.create(path);
  await w.writeExecutable('exe', new Uint8Array(64));
  await w.writeMetadata({ ...emptyMetadata('exe'), anchors, programFlow: { load: [], main: [5], save: [] } });
  await w.close();
  anchors.length = 0;
  console.log(`${count} anchors: file of ${((await stat(path)).size / 2 ** 20).toFixed(1)} MiB`);
  const rssFile = join(dir, 'rss');
  for (const [label, args] of [
    ['dump', ['dump', path]],
    ['dump --json', ['dump', '--json', path]],
    ['config', ['config', path, '-m', 'many', '-o', join(dir, 'config.pbtxt'), '--force']],
  ] as const) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ['--import', join(ROOT, 'test/bench/max-rss.mjs'), join(ROOT, 'bin/popef.cjs'), ...args], {
      env: { ...process.env, BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'ignore', 'pipe'],
      maxBuffer: 1 << 20,
    });
    const seconds = (performance.now() - t0) / 1000;
    const kib = Number((await readFile(rssFile, 'utf8').catch(() => '')).trim().split('\n').pop());
    await rm(rssFile, { force: true });
    const status = r.status === 0 ? 'ok' : `exit ${r.status ?? r.signal ?? '?'}: ${r.stderr.toString().split('\n')[0] ?? ''}`;
    console.log(`  popef ${label}: ${seconds.toFixed(2)} s, peak RSS ${(kib / 1024).toFixed(0)} MiB (targets < 10 s, < 1024 MiB) ${status}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
