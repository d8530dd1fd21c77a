// The two frame caps of src/run/PROTOCOL.md ("Size limits"), on both sides:
// the host's FrameReader and the IPU bridge's one header reader refuse a
// JSON frame over 64 MiB and a TENS frame over 16 GiB before allocating.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { ipuBridgePath } from '../../src/run/load-plugin.js';
import { FrameReader, MAX_FRAME_BYTES, MAX_JSON_FRAME_BYTES, ProtocolError } from '../../src/run/protocol.js';

function header(tag: 'JSON' | 'TENS', length: bigint): Buffer {
  const h = Buffer.alloc(12);
  h.write(tag, 0, 'ascii');
  h.writeBigUInt64LE(length, 4);
  return h;
}

function json(message: object): Buffer {
  const body = Buffer.from(JSON.stringify(message));
  return Buffer.concat([header('JSON', BigInt(body.length)), body]);
}

/** The bridge's exit status and standard error after being sent `bytes`. */
function bridge(bytes: Buffer): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.POPEF_PYTHON ?? 'python3', ['-u', '-B', ipuBridgePath()], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: '' },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.resume();
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(bytes);
  });
}

describe('frame size limits', () => {
  it('are 64 MiB for JSON frames and 16 GiB for tensor frames, as PROTOCOL.md says', () => {
    assert.equal(MAX_JSON_FRAME_BYTES, 64 * 1024 * 1024);
    assert.equal(MAX_FRAME_BYTES, 16 * 1024 ** 3);
  });

  it('the host refuses a JSON frame one byte over its cap, before reading the payload', async () => {
    const pipe = new PassThrough();
    const reader = new FrameReader(pipe);
    pipe.write(header('JSON', BigInt(MAX_JSON_FRAME_BYTES + 1)));
    await assert.rejects(
      reader.nextMessage(),
      (e: unknown) => e instanceof ProtocolError && /control message \(JSON frame\) of 67108865 bytes exceeds the limit of 67108864/.test(e.message),
    );
  });

  it('the bridge stops with status 2 on a JSON frame over its cap, naming it', async () => {
    const r = await bridge(header('JSON', BigInt(MAX_JSON_FRAME_BYTES + 1)));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /protocol violation: a JSON frame of 67108865 bytes exceeds the limit of 67108864/);
  });

  it('the bridge stops with status 2 on a tensor frame over its cap, naming it', async () => {
    const run = json({ type: 'run', id: 1, tensors: [{ name: 'x', dtype: 'U8', shape: [4], bytes: 4 }] });
    const r = await bridge(Buffer.concat([run, header('TENS', BigInt(MAX_FRAME_BYTES) + 1n)]));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /protocol violation: a TENS frame of 17179869185 bytes exceeds the limit of 17179869184/);
  });

  it('the bridge refuses a frame with the wrong tag the same way', async () => {
    const r = await bridge(header('TENS', 4n));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /protocol violation: expected a JSON frame, got 'TENS'/);
  });
});
