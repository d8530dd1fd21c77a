// A stand-in for the IPU bridge that answers an `import` with the messages
// in SCRIPTED_IMPORT (a JSON array), to test how the host takes replies a
// real bridge should never send. A message with "payload": N is followed by
// one chunk of N bytes. Not a plugin for real use.
import { Buffer } from 'node:buffer';

const script = JSON.parse(process.env.SCRIPTED_IMPORT ?? '[]');

function frame(tag, body) {
  const h = Buffer.alloc(12);
  h.write(tag, 0, 'ascii');
  h.writeBigUInt64LE(BigInt(body.length), 4);
  return Buffer.concat([h, body]);
}
const json = (m) => frame('JSON', Buffer.from(JSON.stringify(m)));

let buffered = Buffer.alloc(0);
for await (const chunk of process.stdin) {
  buffered = Buffer.concat([buffered, chunk]);
  while (buffered.length >= 12) {
    const n = Number(buffered.readBigUInt64LE(4));
    if (buffered.length < 12 + n) break;
    const m = JSON.parse(buffered.subarray(12, 12 + n).toString('utf8'));
    buffered = buffered.subarray(12 + n);
    if (m.type === 'hello')
      process.stdout.write(json({ type: 'hello', id: m.id, protocol: 'popef-plugin/1', plugin: 'scripted', version: '1', available: true }));
    else if (m.type === 'close') {
      process.stdout.write(json({ type: 'closed', id: m.id }), () => process.exit(0));
    } else if (m.type === 'import') {
      for (const step of script) {
        const { payload, ...message } = step;
        const tensors = payload === undefined ? undefined : [{ name: 'p', dtype: 'U8', shape: [payload], bytes: payload, chunked: true }];
        process.stdout.write(json({ ...message, id: m.id, ...(tensors === undefined ? {} : { tensors }) }));
        if (payload !== undefined) process.stdout.write(frame('TENS', Buffer.alloc(payload, 1)));
      }
      process.stdout.write(json({ type: 'imported', id: m.id }));
    }
  }
}
