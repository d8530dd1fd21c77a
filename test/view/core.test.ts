import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { deflateSync, crc32 as zlibCrc32 } from 'node:zlib';
import { ModelSet } from '../../src/format/model-set.js';
import { buildReport } from '../../src/inspect/report.js';
import { BlobSource } from '../../src/io/blob-source.js';
import { FileSource } from '../../src/io/file-source.browser.js';
import * as browser from '../../src/io/platform.browser.js';
import { humanBytes } from '../../src/present/human-bytes.js';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

/**
 * What the viewer page's bundle is made of, checked in Node: the browser
 * twins of the platform primitives agree with Node's on the same bytes,
 * BlobSource reads a model as FileSource does, and the bundle pulls in no
 * Node built-in module.
 */

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

describe('the viewer core', () => {
  it("computes zlib's CRC-32, also when continued across chunks", () => {
    const bytes = new Uint8Array(100_003).map((_, i) => (i * 2654435761) >>> 24);
    assert.equal(browser.crc32(bytes), zlibCrc32(bytes));
    assert.equal(browser.crc32(bytes.subarray(5000), browser.crc32(bytes.subarray(0, 5000))), zlibCrc32(bytes));
    assert.equal(browser.crc32(new Uint8Array(0)), 0);
  });

  it('checks UTF-8 strictly, as Node does', () => {
    for (const bytes of [[0x61], [0xc3, 0xa9], [0xc3], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82, 0xac]]) {
      assert.equal(browser.isUtf8(new Uint8Array(bytes)), isUtf8(new Uint8Array(bytes)), String(bytes));
    }
  });

  it('inflates a zlib stream fed in chunks', async () => {
    const plain = new Uint8Array(300_000).map((_, i) => i % 251);
    const packed = deflateSync(plain);
    async function* chunks(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < bytes.length; at += 7000) yield bytes.subarray(at, at + 7000);
      await Promise.resolve();
    }
    const inflation = browser.inflate(chunks(packed));
    assert.deepEqual(await collect(inflation.chunks), Buffer.from(plain));
    assert.equal(inflation.consumed(), packed.length);
    // Bytes after the end of the stream: Chromium's DecompressionStream rejects them, Node 20's does not,
    // so that case is tested in the browser (test/view/page.test.ts, zlib-trailing-bytes.popef).
  });

  it('reads a model from a Blob by slices, as from a file', async () => {
    const path = fixture('mnist/executable.popef');
    const bytes = await readFile(path);
    const fromBlob = await ModelSet.open([new BlobSource(new Blob([bytes]), path)]);
    const fromFile = await ModelSet.open([path]);
    assert.deepEqual(buildReport(fromBlob), buildReport(fromFile));
    await fromBlob.close();
    await fromFile.close();
    const source = new BlobSource(new Blob([bytes]), 'x.popef');
    await assert.rejects(source.read(bytes.length - 2, 4, 'header'), /E_TRUNCATED|file ends at byte/);
  });

  it('refuses a path in the page, naming what to give instead', async () => {
    await assert.rejects(
      FileSource.open('/etc/passwd'),
      (error: Error & { suggestion?: string }) =>
        /cannot be opened in a web page/.test(error.message) && /pick the file/.test(error.suggestion ?? ''),
    );
  });

  it('shows byte counts for people', () => {
    assert.equal(humanBytes(0), '0 B');
    assert.equal(humanBytes(1023), '1023 B');
    assert.equal(humanBytes(1024), '1.00 KiB');
    assert.equal(humanBytes(1074069680), '1.00 GiB');
    assert.equal(humanBytes(31_400), '30.7 KiB');
    assert.equal(humanBytes('18446744073709551615'), '16.0 EiB');
  });

  it('bundles the page with no Node built-in module', async () => {
    const { buildView } = await import('../../scripts/build-view.mjs');
    const { tmpdir } = await import('node:os');
    const built = await buildView({ outFile: `${tmpdir()}/popef-view-test-${process.pid}/index.html`, metafile: true });
    assert.deepEqual(
      built.inputs.filter((i) => i.startsWith('node:') || /^(fs|path|zlib|stream|buffer|crypto|os)$/.test(i)),
      [],
    );
    // The core modules it ships are the browser twins, never the Node ones.
    for (const twin of ['src/io/platform', 'src/io/file-source', 'src/json-schemas']) {
      assert.ok(built.inputs.includes(`${twin}.browser.ts`), twin);
      assert.ok(!built.inputs.includes(`${twin}.ts`), twin);
    }
    assert.ok(built.bytes < 400_000, `the page is ${built.bytes} bytes`);
  });

  it('popef view refuses what it cannot serve or would overwrite, with the documented exit code', async () => {
    const notPopef = await runCli(['view', fixture('malformed/not-popef.bin')]);
    assert.equal(notPopef.code, 2);
    assert.match(notPopef.stderr, /E_NOT_POPEF/);
    await inTempDir(async (dir) => {
      const files = await runCli(['view', fixture('mnist/executable.popef'), '--export', dir]);
      assert.equal(files.code, 2);
      assert.match(files.stderr, /--export writes the page alone; it does not take files/);
      assert.equal((await runCli(['view', '--export', dir])).code, 0);
      const again = await runCli(['view', '--export', dir]);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /E_EXISTS/);
      assert.equal((await runCli(['view', '--export', dir, '--force'])).code, 0);
      // --force replaces only a page popef view wrote.
      await writeFile(join(dir, 'index.html'), "<p>the user's own page</p>");
      const theirs = await runCli(['view', '--export', dir, '--force']);
      assert.equal(theirs.code, 2);
      assert.match(theirs.stderr, /was not written by popef view/);
      assert.equal(await readFile(join(dir, 'index.html'), 'utf8'), "<p>the user's own page</p>");
    });
  });

  it('popef view serves the page and the given file with Range requests, and nothing else', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'view', fixture('mnist/executable.popef')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      const page = await fetch(url);
      assert.equal(page.status, 200);
      assert.match(
        await page.text(),
        /<script id="popef-preload" type="application\/json">\[\{"url":"files\/0\/executable\.popef","name":"executable\.popef"\}\]<\/script>/,
      );
      const bytes = await readFile(fixture('mnist/executable.popef'));
      const ranged = await fetch(new URL('files/0/executable.popef', url), { headers: { Range: 'bytes=4-11' } });
      assert.equal(ranged.status, 206);
      assert.equal(ranged.headers.get('content-range'), `bytes 4-11/${bytes.byteLength}`);
      assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(4, 12));
      const past = await fetch(new URL('files/0/executable.popef', url), { headers: { Range: `bytes=${bytes.byteLength}-` } });
      assert.equal(past.status, 416);
      assert.equal((await fetch(url, { method: 'POST' })).status, 405);
      assert.equal((await fetch(new URL('etc/passwd', url))).status, 404);
    } finally {
      child.kill('SIGINT');
      assert.equal(await new Promise<number | null>((done) => child.on('exit', done)), 0);
    }
  });
});
