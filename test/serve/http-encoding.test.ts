// Accept-Encoding as Triton's HTTP server weighs it (http_server.cc,
// CompressionTypeUsed): the highest q among identity, gzip and deflate.
import assert from 'node:assert/strict';
import { gunzipSync, inflateSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { encodeBody, responseEncoding } from '../../src/serve/http-encoding.js';

describe('response encoding', () => {
  const rows: [string | undefined, string][] = [
    [undefined, 'identity'],
    ['gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['br', 'identity'],
    ['gzip, deflate', 'gzip'],
    ['gzip;q=0.5, deflate', 'deflate'],
    ['deflate;q=0.2,  gzip;q=0.8', 'gzip'],
    ['gzip;q=0', 'identity'],
    ['gzip;q=abc, deflate;q=0.1', 'deflate'],
    ['identity;q=0.9, gzip;q=0.5', 'identity'],
    ['GZIP', 'identity'],
  ];
  for (const [header, expected] of rows) {
    it(`${JSON.stringify(header)} -> ${expected}`, () => assert.equal(responseEncoding(header), expected));
  }

  it('compresses the parts as one body, deflate in zlib format', async () => {
    const parts = [Buffer.from('{"a":1}'), Buffer.from([1, 2, 3])];
    assert.deepEqual(gunzipSync(await encodeBody('gzip', parts)), Buffer.concat(parts));
    const deflated = await encodeBody('deflate', parts);
    assert.equal(deflated[0], 0x78);
    assert.deepEqual(inflateSync(deflated), Buffer.concat(parts));
  });
});
