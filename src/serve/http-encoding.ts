import { promisify } from 'node:util';
import { deflate, gzip } from 'node:zlib';

/**
 * Compressed infer responses, as Triton's HTTP server makes them (server
 * r24.10, http_server.cc): it compresses the answers of the infer and
 * generate endpoints only, with the encoding that Accept-Encoding weighs
 * highest among identity, deflate and gzip (CompressionTypeUsed), and sends
 * every other answer as it is.
 */

export type ResponseEncoding = 'identity' | 'gzip' | 'deflate';

/** CompressionTypeUsed: comma-separated codings with an optional `;q=`; a malformed entry is skipped; ties keep the first. */
export function responseEncoding(acceptEncoding: string | undefined): ResponseEncoding {
  if (acceptEncoding === undefined) return 'identity';
  let chosen: ResponseEncoding = 'identity';
  let weight = 0;
  for (const entry of acceptEncoding.split(',')) {
    const start = entry.search(/[^ ]/);
    const q = entry.indexOf(';q=');
    if (start < 0 || (q >= 0 && start >= q)) continue;
    const type = q < 0 ? entry.slice(start) : entry.slice(start, q);
    const w = q < 0 ? 1 : Number.parseFloat(entry.slice(q + 3));
    if (Number.isNaN(w)) continue;
    if ((type === 'identity' || type === 'gzip' || type === 'deflate') && w > weight) {
      chosen = type;
      weight = w;
    }
  }
  return chosen;
}

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

/** The body in the encoding, one buffer (deflate is zlib's format, as Triton's). */
export function encodeBody(encoding: Exclude<ResponseEncoding, 'identity'>, parts: readonly Buffer[]): Promise<Buffer> {
  const body = parts.length === 1 && parts[0] !== undefined ? parts[0] : Buffer.concat(parts);
  return encoding === 'gzip' ? gzipAsync(body) : deflateAsync(body);
}
