/**
 * The viewer page's figures (issue 29): its size, and the time from giving
 * it a file to seeing the summary, for the MNIST fixture and a 4 GiB model,
 * beside `popef dump` of the same files (the CLI's whole run, start-up
 * included, as a user waits for it). Medians of 7, in Debian's Chromium.
 *
 *   npm run build && tsx test/bench/view.ts
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildView } from '../../scripts/build-view.mjs';
import { ROOT, fixture } from '../helpers.js';
import { launch, writeBigModel } from '../view/browser.js';

const RUNS = 7;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-view-'));
try {
  const page = join(dir, 'index.html');
  const built = await buildView({ outFile: page });
  console.log(`[issue 29] viewer page: ${(built.bytes / 1024).toFixed(1)} KiB (script ${(built.scriptBytes / 1024).toFixed(1)} KiB), one file`);

  const big = join(dir, 'big.popef');
  await writeBigModel(big);
  spawnSync('sync');

  const browser = await launch();
  try {
    for (const [label, file] of [
      ['MNIST', fixture('mnist/executable.popef')],
      ['4 GiB, 200 anchors', big],
    ] as const) {
      const pageTimes: number[] = [];
      const readTimes: number[] = [];
      const cliTimes: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const p = await browser.newPage();
        await p.goto(pathToFileURL(page).href);
        const start = Date.now();
        await p.setInputFiles('#file-input', file);
        await p.waitForSelector('#summary pre');
        pageTimes.push(Date.now() - start);
        // main.ts marks how long reading the file and building the report took, in the page's own clock.
        readTimes.push(
          await p.evaluate(() => (performance.getEntriesByName('popef-summary')[0] as { detail?: unknown } | undefined)?.detail as number),
        );
        await p.close();
        const t = process.hrtime.bigint();
        const r = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'dump', file], { stdio: 'ignore' });
        if (r.status !== 0) throw new Error(`popef dump ${file} exited with ${r.status}`);
        cliTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
      console.log(
        `  ${label}: page shows the summary ${median(pageTimes)} ms after the file is given (reading it and building the report: ${median(readTimes).toFixed(1)} ms); popef dump ${median(cliTimes).toFixed(0)} ms`,
      );
    }
  } finally {
    await browser.close();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
