import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PopefWriter } from '../../src/format/writer.js';
import { printable, withPrintableStrings } from '../../src/present/printable.js';
import { emptyMetadata } from '../../src/schema/model.js';
import { fixture, inTempDir, runCli } from '../helpers.js';

/** Names from a file never reach the terminal or an XML report as raw control characters. */

const ESC = '\u001b';
const hostileName = `x${ESC}]0;pwned\u0007${ESC}[2J\u202eevil`;

async function hostileModel(path: string): Promise<void> {
  const w = await PopefWriter.create(path);
  await w.writeExecutable(`exe${ESC}[31m`, new Uint8Array(8));
  await w.writeMetadata({
    ...emptyMetadata(`exe${ESC}[31m`),
    anchors: [
      { name: hostileName, handle: `h2d_${ESC}[1A`, tensorInfo: { dtype: 'F32', shape: [1] }, isPerReplica: false, type: 'INPUT', programs: [0] },
    ],
    programFlow: { load: [], main: [0], save: [] },
    engineOptions: [{ name: `opt${ESC}[K`, value: `v\r\n${ESC}c` }],
  });
  await w.close();
}

describe('control characters from files', () => {
  it('are shown as escapes by printable(), which leaves clean text and unchanged objects alone', () => {
    assert.equal(printable(hostileName, true), 'x\\x1b]0;pwned\\x07\\x1b[2J\\u{202e}evil');
    assert.equal(printable('tab\tand\nnewline'), 'tab\tand\nnewline');
    assert.equal(printable('tab\tand\nnewline', true), 'tab\\x09and\\x0anewline');
    const clean = { a: ['x', { b: 'y' }] };
    assert.equal(withPrintableStrings(clean), clean);
    const dirty = { a: ['x', { b: `y${ESC}` }], c: 'z' };
    const shown = withPrintableStrings(dirty);
    assert.deepEqual(shown, { a: ['x', { b: 'y\\x1b' }], c: 'z' });
    assert.equal(dirty.a[1] !== undefined && typeof dirty.a[1] === 'object' ? dirty.a[1].b : '', `y${ESC}`, 'the original is untouched');
  });

  it('never reach the terminal raw from dump (text, --all, Markdown) or diff, while --json keeps the exact names', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'hostile.popef');
      await hostileModel(path);
      for (const args of [
        ['dump', path],
        ['dump', '--all', path],
        ['dump', '--markdown', path],
        ['diff', path, fixture('mnist/executable.popef')],
      ]) {
        const r = await runCli(args);
        assert.ok(r.code === 0 || r.code === 1, `${args.join(' ')}: ${r.stderr}`);
        // eslint-disable-next-line no-control-regex -- looking for raw control characters.
        assert.doesNotMatch(r.stdout + r.stderr, /[\u0000-\u0008\u000b-\u001f\u007f\u202e]/, `${args.join(' ')} printed a raw control character`);
        assert.match(r.stdout, /\\x1b/, `${args.join(' ')} shows the escape`);
      }
      const json = await runCli(['dump', '--json', path]);
      assert.ok(json.stdout.includes(JSON.stringify(hostileName).slice(1, -1)), 'JSON carries the exact name, escaped the JSON way');
    });
  });

  it("keep a JUnit report well-formed XML (checked by Python's XML parser) and are escaped in text and GitHub output", async () => {
    await inTempDir(async (dir) => {
      const model = join(dir, 'repo', 'm');
      await mkdir(join(model, '1'), { recursive: true });
      await copyFile(fixture('mnist/executable.popef'), join(model, '1', 'executable.popef'));
      await writeFile(join(model, '1', 'name_map.json'), '{}');
      // pbtxt escapes put the control characters into the name Triton compares with the directory.
      await writeFile(
        join(model, 'config.pbtxt'),
        'name: "m\\001\\033[2J\\uFFFE"\nbackend: "poplar"\nmax_batch_size: 1\ninput { name: "input" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] }\noutput { name: "softmax/Softmax:0" data_type: TYPE_FP32 dims: [ 10 ] }\n',
      );
      const junit = await runCli(['validate', join(dir, 'repo'), '--format', 'junit']);
      assert.equal(junit.code, 1, junit.stderr);
      assert.match(junit.stdout, /\\x01\\x1b\[2J\\u\{fffe\}/);
      execFileSync('python3', ['-c', 'import sys, xml.etree.ElementTree as E; E.fromstring(sys.stdin.buffer.read())'], { input: junit.stdout });
      for (const format of ['text', 'github']) {
        const r = await runCli(['validate', join(dir, 'repo'), '--format', format]);
        // eslint-disable-next-line no-control-regex -- looking for raw control characters.
        assert.doesNotMatch(r.stdout, /[\u0000-\u0008\u000b-\u001f\u007f]/, `${format} printed a raw control character`);
        assert.match(r.stdout, /\\x01\\x1b\[2J/);
      }
    });
  });
});
