import type { Inflation } from './platform.js';

/**
 * The browser's versions of io/platform.ts, for the viewer page: CRC-32 from
 * a table, UTF-8 checked by a fatal TextDecoder, inflation by the
 * DecompressionStream every current browser has. Only the page's bundle
 * uses this file (scripts/build.mjs maps platform.js to it).
 */

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(bytes: Uint8Array, seed = 0): number {
  let c = ~seed >>> 0;
  for (const byte of bytes) c = ((TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8)) >>> 0;
  return ~c >>> 0;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

const strict = new TextDecoder('utf-8', { fatal: true });

export function isUtf8(bytes: Uint8Array): boolean {
  try {
    strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

export function inflate(stored: AsyncIterable<Uint8Array>): Inflation {
  let total = 0;
  const iterator = stored[Symbol.asyncIterator]();
  const input = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done === true) {
        controller.close();
        return;
      }
      total += next.value.byteLength;
      controller.enqueue(next.value);
    },
  });
  // Chromium, Firefox and Safari reject bytes after the end of the zlib
  // stream, so a stream that ends cleanly consumed everything it was given.
  // Cast: DOM's and Node's typings of DecompressionStream disagree on the byte array type it takes
  // (lint sees Node's, where it is not needed; the page's tsconfig sees DOM's).
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  const output = input.pipeThrough(new DecompressionStream('deflate') as unknown as TransformStream<Uint8Array, Uint8Array>);
  const reader = output.getReader();
  return {
    chunks: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const next = await reader.read();
          if (next.done) return;
          yield next.value;
        }
      },
    },
    consumed: () => total,
    destroy: () => {
      void reader.cancel().catch(() => undefined);
    },
  };
}
