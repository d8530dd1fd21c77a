import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { PNG } from 'pngjs';
import type { Browser, Page } from 'playwright-core';
import { fixture, runCli, tempDir } from '../helpers.js';
import { browserMissing, launch, pageErrors, screenshot, writeBigModel } from './browser.js';

/**
 * The viewer page in a real browser (Debian's Chromium): the exported page
 * opened from file://, files given through its file input, and the results
 * compared with what the CLI prints and writes for the same file.
 */

const MNIST = fixture('mnist/executable.popef');
const NAMES = { input: 'digit_image', 'softmax/Softmax:0': 'output_labels' };
const require = createRequire(import.meta.url);

async function openExported(browser: Browser, page: string): Promise<{ page: Page; errors: string[] }> {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = pageErrors(p);
  await p.goto(pathToFileURL(page).href);
  return { page: p, errors };
}

async function openFiles(page: Page, files: readonly string[]): Promise<void> {
  await page.setInputFiles('#file-input', [...files]);
  // Until these files are open (their label in the status) or refused: a summary already on the page may be an
  // earlier file's, and a verify clicked before the new file replaced it would have its result cleared.
  const label = files.map((f) => basename(f)).join(' + ');
  await page.waitForFunction((opening) => {
    const text = document.querySelector('#status')?.textContent ?? '';
    return text.startsWith(`${opening}: `) || text.startsWith(`cannot open ${opening}: `);
  }, label);
}

/** axe-core's serious and critical violations on the page as it is now. */
async function seriousViolations(page: Page): Promise<{ id: string; impact: string | null; nodes: number }[]> {
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run: (context: Document) => Promise<{ violations: { id: string; impact: string | null; nodes: unknown[] }[] }> } }
    ).axe;
    const result = await axe.run(document);
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A PNG that is not one flat colour: the page drew something. */
function distinctColours(png: Buffer): number {
  const image = PNG.sync.read(png);
  const seen = new Set<number>();
  for (let i = 0; i < image.data.length; i += 4 * 97) seen.add(image.data.readUInt32BE(i));
  return seen.size;
}

describe('popef view: the page in Chromium', { skip: browserMissing }, () => {
  let browser: Browser;
  let dir: string;
  let cleanup: () => Promise<void>;
  let pagePath: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    const exported = await runCli(['view', '--export', join(dir, 'site')]);
    assert.equal(exported.code, 0, exported.stderr);
    pagePath = join(dir, 'site', 'index.html');
    browser = await launch();
  });
  after(async () => {
    await browser.close();
    await cleanup();
  });

  it('opens the MNIST fixture from file:// and shows the seed report as popef dump prints it', async () => {
    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [MNIST]);
    const shown = (await page.textContent('#summary pre')) ?? '';
    const cli = await runCli(['dump', MNIST]);
    // The first line names the file as each was given it (a path here, a file name there).
    assert.equal(shown.split('\n').slice(1).join('\n'), cli.stdout.split('\n').slice(1).join('\n'));
    assert.match(shown, /Name: "input":\n {6}TensorInfo: \{ dtype: F32, sizeInBytes: 3136, shape \[1, 1, 28, 28\] \}/);
    assert.match((await page.textContent('#anchors')) ?? '', /anchor_d2h_softmax\/Softmax:0/);
    assert.match((await page.textContent('#blobs')) ?? '', /30\.\d KiB|KiB/);
    const png = await readFile(await screenshot(page, 'mnist'));
    assert.ok(distinctColours(png) > 4, 'the screenshot is blank');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('writes the seed config.pbtxt and name_map.json byte for byte as popef scaffold does, once the two names are typed', async () => {
    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [MNIST]);
    await page.fill('#model-name', 'mnist');
    await page.getByLabel('input anchor input').fill(NAMES.input);
    await page.getByLabel('output anchor softmax/Softmax:0').fill(NAMES['softmax/Softmax:0']);
    const repo = join(dir, 'repo-names');
    const cli = await runCli([
      'scaffold',
      MNIST,
      '--repository',
      repo,
      '--model',
      'mnist',
      '--name',
      `input=${NAMES.input}`,
      '--name',
      `softmax/Softmax:0=${NAMES['softmax/Softmax:0']}`,
    ]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(await page.textContent('#config-pbtxt'), await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8'));
    assert.equal(await page.textContent('#name-map'), await readFile(join(repo, 'mnist', '1', 'name_map.json'), 'utf8'));
    const download = page.waitForEvent('download');
    await page.click('#download-config');
    assert.equal((await download).suggestedFilename(), 'config.pbtxt');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('checks a pasted config with the messages and positions of popef validate', async () => {
    const repo = join(dir, 'repo-broken');
    const made = await runCli([
      'scaffold',
      MNIST,
      '--repository',
      repo,
      '--model',
      'mnist',
      '--name',
      `input=${NAMES.input}`,
      '--name',
      `softmax/Softmax:0=${NAMES['softmax/Softmax:0']}`,
    ]);
    assert.equal(made.code, 0, made.stderr);
    const configPath = join(repo, 'mnist', 'config.pbtxt');
    const broken = (await readFile(configPath, 'utf8')).replace('dims: [ 1, 28, 28 ]', 'dims: [ 1, 28, 29 ]').replace('TYPE_FP32', 'TYPE_FP16');
    await writeFile(configPath, broken);
    const cli = await runCli(['validate', repo, '--format', 'json']);
    assert.equal(cli.code, 1, cli.stderr);
    const expected =
      (JSON.parse(cli.stdout) as { repositories: { models: { findings: { rule: string; message: string; line?: number; column?: number }[] }[] }[] })
        .repositories[0]?.models[0]?.findings ?? [];
    assert.ok(expected.length >= 2, 'the broken config should have at least the dims and dtype findings');

    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [MNIST]);
    await page.fill('#model-name', 'mnist');
    await page.getByLabel('input anchor input').fill(NAMES.input);
    await page.getByLabel('output anchor softmax/Softmax:0').fill(NAMES['softmax/Softmax:0']);
    await page.fill('#pasted', broken);
    await page.click('#validate-button');
    const items = await page.locator('#findings li').allTextContents();
    for (const f of expected) {
      const item = items.find((text) => text.includes(f.message));
      assert.ok(item !== undefined, `the page lacks popef validate's finding: ${f.message}\npage: ${items.join('\n')}`);
      assert.ok(item.includes(`[${f.rule}]`), `wrong rule for ${f.message}`);
      if (f.line !== undefined) assert.ok(item.includes(`mnist/config.pbtxt:${f.line}:${f.column ?? 0}`), `wrong position for ${f.message}: ${item}`);
    }
    // A position leads to its line in the pasted text.
    await page.locator('#findings a[data-line]').first().click();
    const selected = await page.$eval('#pasted', (area) => {
      const a = area as HTMLTextAreaElement;
      return a.value.slice(a.selectionStart, a.selectionEnd);
    });
    assert.ok(selected.length > 0 && broken.includes(selected));
    await page.fill('#pasted', 'max_batch_size: [');
    await page.click('#validate-button');
    assert.match(
      (await page.textContent('#findings')) ?? '',
      /failed to read text proto from mnist\/config\.pbtxt: Error parsing text-format inference\.ModelConfig: 1:/,
    );
    await screenshot(page, 'validate');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('verifies a damaged file and reports the damaged blob, as dump --verify does', async () => {
    const { page, errors } = await openExported(browser, pagePath);
    const damaged = fixture('malformed/payload-bitflip.popef');
    await openFiles(page, [damaged]);
    await page.click('#verify-button');
    await page.waitForFunction(() => /Verified|Damage/.test(document.querySelector('#verify-result')?.textContent ?? ''));
    const result = (await page.textContent('#verify-result')) ?? '';
    assert.match(result, /Damage found in 1 blob\(s\)/);
    assert.match(result, /payload checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/);
    // A zlib stream followed by stray bytes: the browser's inflater must see them, as Node's does for dump --verify.
    const cliTrailing = await runCli(['dump', '--verify', fixture('malformed/zlib-trailing-bytes.popef')]);
    assert.equal(cliTrailing.code, 2);
    await openFiles(page, [fixture('malformed/zlib-trailing-bytes.popef')]);
    await page.click('#verify-button');
    await page.waitForFunction(() => /Verified|Damage/.test(document.querySelector('#verify-result')?.textContent ?? ''));
    assert.match((await page.textContent('#verify-result')) ?? '', /Damage found in 1 blob\(s\)/);
    await openFiles(page, [MNIST]);
    await page.click('#verify-button');
    await page.waitForFunction(() => /Verified|Damage/.test(document.querySelector('#verify-result')?.textContent ?? ''));
    assert.match((await page.textContent('#verify-result')) ?? '', /^Verified: every checksum of 5 blob\(s\)/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('compares two files as popef diff does', async () => {
    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [MNIST]);
    const other = fixture('compressed/executable.popef');
    await page.setInputFiles('#diff-input', other);
    await page.waitForSelector('#diff-result pre');
    const cli = await runCli(['diff', MNIST, other]);
    const shown = (await page.textContent('#diff-result pre')) ?? '';
    assert.ok(shown.length > 0);
    // The report names the files as given; past its header the two agree.
    const body = (text: string): string =>
      text
        .split('\n')
        .filter((l) => !l.includes('executable.popef'))
        .join('\n');
    assert.equal(body(shown), body(cli.stdout));
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('says, as popef diff does, when two local files hold the same bytes stored differently', async () => {
    // The compressed fixture unpacked and packed again with its executable stored plainly.
    const unpacked = join(dir, 'unpacked-plain');
    assert.equal((await runCli(['unpack', fixture('compressed/executable.popef'), '-o', unpacked])).code, 0);
    const manifestPath = join(unpacked, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { blobs: { type: string; compress?: boolean }[] };
    for (const b of manifest.blobs) if (b.type === 'POPLAR_EXECUTABLE') b.compress = false;
    await writeFile(manifestPath, JSON.stringify(manifest));
    const plain = join(dir, 'plain.popef');
    assert.equal((await runCli(['pack', manifestPath, '-o', plain])).code, 0);

    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [fixture('compressed/executable.popef')]);
    await page.setInputFiles('#diff-input', plain);
    await page.waitForSelector('#diff-result pre');
    const shown = (await page.textContent('#diff-result pre')) ?? '';
    const cli = await runCli(['diff', fixture('compressed/executable.popef'), plain]);
    assert.match(cli.stdout, /all in how the same bytes are stored/);
    const body = (text: string): string =>
      text
        .split('\n')
        .filter((l) => !l.includes('.popef'))
        .join('\n');
    assert.equal(body(shown), body(cli.stdout));
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('opens a 4 GiB file reading only its headers and metadata', async () => {
    const big = join(dir, 'big.popef');
    await writeBigModel(big);

    const { page, errors } = await openExported(browser, pagePath);
    // Counts what the page reads of the File: slices are the only way it reads one.
    await page.evaluate(() => {
      // The original method, called with the Blob it belongs to.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      const slice = Blob.prototype.slice;
      (window as unknown as { bytesSliced: number }).bytesSliced = 0;
      Blob.prototype.slice = function (this: Blob, start?: number, end?: number, type?: string): Blob {
        const part = slice.call(this, start, end, type);
        (window as unknown as { bytesSliced: number }).bytesSliced += part.size;
        return part;
      };
    });
    await openFiles(page, [big]);
    assert.match((await page.textContent('#status')) ?? '', /1 model\(s\), \d+ blob\(s\), 4\.00 GiB/);
    assert.match((await page.textContent('#summary pre')) ?? '', /Name: "input\/199"/);
    const read = await page.evaluate(() => (window as unknown as { bytesSliced: number }).bytesSliced);
    assert.ok(read < 1024 * 1024, `the page read ${read} bytes of a 4 GiB file to show its summary`);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('has labelled controls, keyboard focus and no serious accessibility violations (axe-core)', async () => {
    const { page, errors } = await openExported(browser, pagePath);
    await openFiles(page, [MNIST]);
    assert.deepEqual(await seriousViolations(page), []);
    // Tab reaches the file input, the URL box, its button and the verify button, in that order.
    const reached: string[] = [];
    await page.focus('body');
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      reached.push(await page.evaluate(() => document.activeElement?.id ?? ''));
    }
    const order = ['file-input', 'url-input', 'verify-button'].map((id) => reached.indexOf(id));
    assert.ok(
      order.every((at, i) => at >= 0 && (i === 0 || at > (order[i - 1] ?? 0))),
      `focus order: ${reached.join(', ')}`,
    );
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('popef validate --format html writes one self-contained page of the findings, readable in a browser', async () => {
    const repo = join(dir, 'repo-html');
    const made = await runCli(['scaffold', MNIST, '--repository', repo, '--model', 'mnist']);
    assert.equal(made.code, 0, made.stderr);
    const configPath = join(repo, 'mnist', 'config.pbtxt');
    await writeFile(configPath, (await readFile(configPath, 'utf8')).replace('dims: [ 1, 28, 28 ]', 'dims: [ 1, 28, 29 ]'));
    const json = await runCli(['validate', repo, '--format', 'json']);
    const html = await runCli(['validate', repo, '--format', 'html']);
    assert.equal(html.code, json.code);
    assert.equal(html.code, 1);
    const report = join(dir, 'report.html');
    await writeFile(report, html.stdout);
    // The report's CSP forbids scripts; the test lifts it only to run axe-core.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const errors = pageErrors(page);
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(pathToFileURL(report).href);
    const findings =
      (JSON.parse(json.stdout) as { repositories: { models: { findings: { rule: string; message: string; line?: number; column?: number }[] }[] }[] })
        .repositories[0]?.models[0]?.findings ?? [];
    const text = (await page.textContent('main')) ?? '';
    for (const f of findings) {
      assert.ok(text.includes(f.message), f.message);
      if (f.line !== undefined) assert.ok(text.includes(`mnist/config.pbtxt:${f.line}:${f.column ?? 0}`));
      // The rule id links to its row in the rule list.
      assert.equal((await page.locator(`a[href="#rule-${f.rule}"]`).count()) > 0, true);
      assert.equal(await page.locator(`[id="rule-${f.rule}"]`).count(), 1);
    }
    assert.match(text, /1 error, 0 warnings in 1 model/);
    assert.deepEqual(
      requests.filter((u) => !u.startsWith('file:')),
      [],
      'the report loads nothing',
    );
    assert.deepEqual(await seriousViolations(page), []);
    await screenshot(page, 'validate-report');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('popef view FILE serves the page with the file open, read over HTTP with Range requests', async () => {
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/popef.cjs'), 'view', MNIST], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((done, fail) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const line = /^(http:\/\/127\.0\.0\.1:\d+\/)\n/m.exec(out);
          if (line?.[1] !== undefined) done(line[1]);
        });
        child.on('exit', (code) => fail(new Error(`popef view exited with ${code}`)));
      });
      const page = await browser.newPage();
      const errors = pageErrors(page);
      const ranges: string[] = [];
      page.on('request', (request) => {
        const range = request.headers().range;
        if (range !== undefined) ranges.push(range);
      });
      await page.goto(url);
      await page.waitForSelector('#summary pre');
      assert.match((await page.textContent('#summary pre')) ?? '', /Name: "softmax\/Softmax:0":/);
      assert.ok(ranges.length > 0 && ranges.every((r) => /^bytes=\d+-\d+$/.test(r)), `requests: ${ranges.join(', ')}`);
      assert.equal((await fetch(new URL('files/9/x', url))).status, 404);
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      child.kill('SIGINT');
      const code = await new Promise<number | null>((done) => child.on('exit', done));
      assert.equal(code, 0);
    }
  });
});
