import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, fixture } from '../helpers.js';

const BIN = join(ROOT, 'bin/popef.cjs');

describe('the popef process', () => {
  it('ends quietly when its reader goes away (popef dump ... | head)', async () => {
    const child = spawn(process.execPath, [BIN, 'dump', '--all', '--json', fixture('mnist/executable.popef')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });

  it('runs from the built bundle with the documented exit codes', async () => {
    const run = async (args: string[]): Promise<number | null> => {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: 'ignore' });
      return ((await once(child, 'exit')) as [number | null])[0];
    };
    assert.equal(await run(['dump', fixture('seed/executable.popef')]), 0);
    assert.equal(await run(['validate', fixture('repos/io-dims')]), 1);
    assert.equal(await run(['dump', fixture('malformed/not-popef.bin')]), 2);
    assert.equal(await run(['no-such-command']), 2);
  });
});
