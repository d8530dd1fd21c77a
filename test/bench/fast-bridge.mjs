// A stand-in for the IPU bridge that costs next to nothing: it answers
// the handshake and one `import` by streaming FAST_BRIDGE_PAYLOAD (a raw
// file) as a tensor blob in 4 MiB chunk frames, straight from the page
// cache. test/bench/import.ts uses it to time the toolkit's side of an
// import with the bridge's own cost aside. Not a plugin for real use.
import { Buffer } from 'node:buffer';
import { open } from 'node:fs/promises';

const CHUNK = 4 * 1024 * 1024;
const payload = process.env.FAST_BRIDGE_PAYLOAD ?? '';
const metadata = JSON.parse(process.env.FAST_BRIDGE_METADATA ?? '{}');

function frame(tag, body) {
  const h = Buffer.alloc(12);
  h.write(tag, 0, 'ascii');
  h.writeBigUInt64LE(BigInt(body.length), 4);
  return [h, body];
}

async function send(parts) {
  for (const p of parts) if (!process.stdout.write(p)) await new Promise((r) => process.stdout.once('drain', r));
}

const json = (m) => frame('JSON', Buffer.from(JSON.stringify(m)));

let buffered = Buffer.alloc(0);
async function* messages() {
  for await (const chunk of process.stdin) {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 12) {
      const n = Number(buffered.readBigUInt64LE(4));
      if (buffered.length < 12 + n) break;
      const body = buffered.subarray(12, 12 + n);
      buffered = buffered.subarray(12 + n);
      yield JSON.parse(body.toString('utf8'));
    }
  }
}

for await (const m of messages()) {
  if (m.type === 'hello') await send(json({ type: 'hello', id: m.id, protocol: 'popef-plugin/1', plugin: 'fast', version: '1', available: true }));
  else if (m.type === 'close') {
    await send(json({ type: 'closed', id: m.id }));
    process.exit(0);
  } else if (m.type === 'import') {
    const exe = Buffer.alloc(1024, 7);
    await send(
      json({
        type: 'blob',
        id: m.id,
        kind: 'executable',
        name: metadata.executable,
        tensors: [{ name: metadata.executable, dtype: 'U8', shape: [exe.length], bytes: exe.length, chunked: true }],
      }),
    );
    await send(frame('TENS', exe));
    await send(json({ type: 'blob', id: m.id, kind: 'metadata', metadata }));
    const file = await open(payload);
    const { size } = await file.stat();
    const info = metadata.anchors[0].tensorInfo;
    await send(
      json({
        type: 'blob',
        id: m.id,
        kind: 'tensor',
        name: 'weights',
        tensorInfo: info,
        tensors: [{ name: 'weights', dtype: 'U8', shape: [size], bytes: size, chunked: true }],
      }),
    );
    for (let at = 0; at < size;) {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - at));
      const { bytesRead } = await file.read(buf, 0, buf.length, at);
      at += bytesRead;
      await send(frame('TENS', buf.subarray(0, bytesRead)));
    }
    await file.close();
    await send(json({ type: 'imported', id: m.id }));
  }
}
