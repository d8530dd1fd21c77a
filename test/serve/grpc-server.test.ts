// The gRPC server of popef serve (src/serve/grpc-server.ts, on node:http2) and its wire format
// (grpc-wire.ts), against @grpc/grpc-js's client and raw HTTP/2 requests: framing, status
// trailers, compression, deadlines, cancellation, unknown methods, bidi streams.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { Client, compressionAlgorithms, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { BodyBudget } from '../../src/serve/body-budget.js';
import { GrpcServer, type GrpcMethod } from '../../src/serve/grpc-server.js';
import { GrpcCode, GrpcStatusError, MessageDeframer, decodeMessage, frameMessage, parseTimeout, percentEncode } from '../../src/serve/grpc-wire.js';

const json = {
  decode: (b: Buffer): Record<string, unknown> => JSON.parse(b.toString()) as Record<string, unknown>,
  encode: (m: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify(m)),
};

/**
 * A bidi method answering each request `ms` later with `answer(request)`,
 * the call ended once every answer is out, as ModelStreamInfer ends. With
 * `waits`, a request's handling lasts until its answer is written (the
 * server counts its bytes as waiting until then).
 */
function answersLater(ms: number, answer: (r: Record<string, unknown>) => Record<string, unknown>, waits: boolean): GrpcMethod {
  return {
    kind: 'bidi',
    ...json,
    open: (call) => {
      let pending = 0;
      let ended = false;
      const later = (r: Record<string, unknown>, done: () => void): void => {
        pending += 1;
        setTimeout(() => {
          call.write(answer(r));
          pending -= 1;
          if (ended && pending === 0) call.end();
          done();
        }, ms);
      };
      return {
        message: (r) => (waits ? new Promise<void>((resolve) => later(r, resolve)) : later(r, () => undefined)),
        halfClose: () => {
          ended = true;
          if (pending === 0) call.end();
        },
      };
    },
  };
}

describe('gRPC wire format', () => {
  it('cuts messages across chunk boundaries and refuses one past the limit from its prefix', () => {
    const a = frameMessage(Buffer.from('hello'));
    const b = frameMessage(Buffer.from('world!'));
    const all = Buffer.concat([a, b]);
    for (let cut = 0; cut <= all.byteLength; cut++) {
      const d = new MessageDeframer(100);
      const got = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))].map((m) => m.bytes.toString());
      assert.deepEqual(got, ['hello', 'world!'], `cut at ${cut}`);
      assert.equal(d.heldBytes, 0);
    }
    const d = new MessageDeframer(4);
    assert.throws(
      () => d.push(a.subarray(0, 5)),
      (e: unknown) => e instanceof GrpcStatusError && e.code === GrpcCode.RESOURCE_EXHAUSTED && /larger than max \(5 vs\. 4\)/.test(e.message),
    );
  });

  it('reads grpc-timeout values and percent-encodes grpc-message as the protocol says', () => {
    assert.equal(parseTimeout('100m'), 100);
    assert.equal(parseTimeout('2S'), 2000);
    assert.equal(parseTimeout('1H'), 3_600_000);
    assert.equal(parseTimeout('5000u'), 5);
    assert.equal(parseTimeout('123456789m'), undefined); // 9 digits
    assert.equal(parseTimeout('10x'), undefined);
    assert.equal(percentEncode("model 'x' isn't ready"), "model 'x' isn't ready");
    assert.equal(percentEncode('100% ü\nend '), '100%25 %C3%BC%0Aend%20');
  });

  it('decompresses gzip messages, bounded by the limit', async () => {
    const body = gzipSync(Buffer.alloc(1000, 7));
    assert.equal((await decodeMessage({ compressed: true, bytes: body }, 'gzip', 2000)).byteLength, 1000);
    await assert.rejects(
      decodeMessage({ compressed: true, bytes: body }, 'gzip', 999),
      (e: unknown) => e instanceof GrpcStatusError && e.code === GrpcCode.RESOURCE_EXHAUSTED,
    );
    await assert.rejects(
      decodeMessage({ compressed: true, bytes: body }, 'identity', 2000),
      (e: unknown) => e instanceof GrpcStatusError && e.code === GrpcCode.INTERNAL,
    );
  });
});

describe('gRPC server on node:http2', () => {
  let server: GrpcServer;
  let port = 0;
  let client: Client;
  let cancelled = 0;
  let bigReceived = 0;
  let neverReceived = 0;
  before(async () => {
    const methods = new Map<string, GrpcMethod>([
      ['/t.S/Echo', { kind: 'unary', ...json, handle: (r) => Promise.resolve({ echo: r.text }) }],
      ['/t.S/Fail', { kind: 'unary', ...json, handle: () => Promise.reject(new GrpcStatusError(GrpcCode.NOT_FOUND, "no model 'x' (100%)")) }],
      [
        '/t.S/Loud',
        { kind: 'unary', ...json, handle: () => Promise.reject(new GrpcStatusError(GrpcCode.NOT_FOUND, `no model '${'m'.repeat(200_000)}'`)) },
      ],
      [
        '/t.S/Slow',
        {
          kind: 'unary',
          ...json,
          handle: (_r, call) =>
            new Promise((resolve) => {
              const timer = setTimeout(() => resolve({}), 5000);
              call.signal.addEventListener('abort', () => {
                cancelled += 1;
                clearTimeout(timer);
                resolve({});
              });
            }),
        },
      ],
      [
        '/t.S/Chat',
        {
          kind: 'bidi',
          ...json,
          open: (call) => ({ message: (r) => call.write({ echo: r.text }), halfClose: () => call.end() }),
        },
      ],
      [
        '/t.S/Big',
        {
          kind: 'bidi',
          ...json,
          // 64 KiB answered per small message: a client that never reads them fills the server's side.
          open: (call) => ({
            message: () => {
              bigReceived += 1;
              call.write({ pad: 'p'.repeat(64 * 1024) });
            },
            halfClose: () => call.end(),
          }),
        },
      ],
      // Each answer 50 ms after its request, as ModelStreamInfer answers.
      ['/t.S/Later', answersLater(50, (r) => ({ echo: r.text }), false)],
      // Each request answered 5 ms later with 64 KiB, its wait ended once the answer is written: two 900-byte
      // requests waiting pause the stream (the waiting bytes pass 1024), and a client that does not read backs
      // the answers up while it is paused.
      ['/t.S/Delayed', answersLater(5, (r) => ({ echo: String(r.text).slice(0, 8), pad: 'p'.repeat(64 * 1024) }), true)],
      [
        '/t.S/Never',
        {
          kind: 'bidi',
          ...json,
          // A model that never answers: every request waits.
          open: () => ({
            message: () => {
              neverReceived += 1;
              return new Promise<void>(() => undefined);
            },
            halfClose: () => undefined,
          }),
        },
      ],
    ]);
    server = new GrpcServer(methods, { maxMessageLength: 1024 });
    port = await server.listen(0, '127.0.0.1');
    client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.close();
  });

  const unary = (
    path: string,
    message: Record<string, unknown> | Buffer,
    options: { deadline?: number; client?: Client } = {},
  ): Promise<{ error: ServiceError | null; value?: Record<string, unknown> }> =>
    new Promise((resolve) => {
      (options.client ?? client).makeUnaryRequest(
        path,
        (v: Record<string, unknown> | Buffer) => (Buffer.isBuffer(v) ? v : json.encode(v)),
        (b: Buffer) => json.decode(b),
        message,
        new Metadata(),
        options.deadline === undefined ? {} : { deadline: options.deadline },
        (error, value) => resolve({ error, value }),
      );
    });

  it('answers a unary call, and a method error with its code and message', async () => {
    assert.deepEqual((await unary('/t.S/Echo', { text: 'hi' })).value, { echo: 'hi' });
    const { error } = await unary('/t.S/Fail', {});
    assert.equal(error?.code, status.NOT_FOUND);
    assert.equal(error.details, "no model 'x' (100%)");
  });

  it('answers UNIMPLEMENTED for a method it does not have, and RESOURCE_EXHAUSTED past the size limit', async () => {
    const unknown = await unary('/t.S/Nope', {});
    assert.equal(unknown.error?.code, status.UNIMPLEMENTED);
    assert.match(unknown.error.details, /does not implement the method \/t\.S\/Nope/);
    const big = await unary('/t.S/Echo', { text: 'x'.repeat(2000) });
    assert.equal(big.error?.code, status.RESOURCE_EXHAUSTED);
    assert.match(big.error.details, /larger than max \(\d+ vs\. 1024\)/);
  });

  it('reads gzip and deflate requests, as grpc clients compress them', async () => {
    for (const algorithm of [compressionAlgorithms.deflate, compressionAlgorithms.gzip]) {
      const compressing = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), { 'grpc.default_compression_algorithm': algorithm });
      try {
        assert.deepEqual((await unary('/t.S/Echo', { text: 'y'.repeat(500) }, { client: compressing })).value, { echo: 'y'.repeat(500) });
      } finally {
        compressing.close();
      }
    }
  });

  it('cancels a call past its deadline (the method sees its signal abort)', async () => {
    const before = cancelled;
    const { error } = await unary('/t.S/Slow', {}, { deadline: Date.now() + 200 });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    for (let i = 0; i < 50 && cancelled === before; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(cancelled, before + 1);
  });

  it('answers each message of a bidi stream, then OK when the client ends it', async () => {
    const call = client.makeBidiStreamRequest('/t.S/Chat', json.encode, json.decode);
    const got: unknown[] = [];
    call.on('data', (m: unknown) => got.push(m));
    const ended = new Promise<void>((resolve, reject) => {
      call.on('status', (s: { code: number }) => (s.code === 0 ? resolve() : reject(new Error(`status ${s.code}`))));
      call.on('error', reject);
    });
    for (const text of ['a', 'b', 'c']) call.write({ text });
    call.end();
    await ended;
    assert.deepEqual(got, [{ echo: 'a' }, { echo: 'b' }, { echo: 'c' }]);
  });

  it('answers 415 to a request that is not gRPC, and UNIMPLEMENTED to an encoding it cannot read', async () => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const ask = (headers: Record<string, string>, body: Buffer): Promise<Record<string, unknown>> =>
      new Promise((resolve) => {
        const stream = session.request({ ':method': 'POST', ':path': '/t.S/Echo', ...headers });
        let seen: Record<string, unknown> = {};
        stream.on('response', (h) => (seen = { ...seen, ...h }));
        stream.on('trailers', (h: Record<string, unknown>) => (seen = { ...seen, ...h }));
        stream.on('data', () => undefined);
        stream.on('close', () => resolve(seen));
        stream.end(body);
      });
    try {
      assert.equal((await ask({ 'content-type': 'text/plain' }, Buffer.from('x')))[':status'], 415);
      const brotli = await ask({ 'content-type': 'application/grpc', 'grpc-encoding': 'br' }, frameMessage(json.encode({ text: 'z' })));
      assert.equal(brotli['grpc-status'], String(status.UNIMPLEMENTED));
      assert.equal(brotli['grpc-accept-encoding'], 'identity,deflate,gzip');
      const plain = await ask({ 'content-type': 'application/grpc', te: 'trailers' }, frameMessage(json.encode({ text: 'z' })));
      assert.equal(plain['grpc-status'], '0');
    } finally {
      session.close();
    }
  });

  /** A raw HTTP/2 call: its headers and trailers merged, once the stream closes. */
  const raw = (headers: Record<string, string>, body: Buffer, endAfterMs = 0): Promise<Record<string, unknown>> =>
    new Promise((resolve) => {
      const session = connect(`http://127.0.0.1:${port}`);
      session.on('error', () => undefined);
      const stream = session.request({ ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers', ...headers });
      let seen: Record<string, unknown> = {};
      stream.on('response', (h) => (seen = { ...seen, ...h }));
      stream.on('trailers', (h: Record<string, unknown>) => (seen = { ...seen, ...h }));
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('close', () => {
        session.close();
        resolve(seen);
      });
      stream.write(body);
      setTimeout(() => stream.end(), endAfterMs);
    });

  it('a grpc-timeout past what setTimeout can wait (99999999H) is no deadline, not an immediate one', async () => {
    for (const timeout of ['99999999H', '3000000S']) {
      const answer = await raw({ ':path': '/t.S/Echo', 'grpc-timeout': timeout }, frameMessage(json.encode({ text: 'z' })), 100);
      assert.equal(answer['grpc-status'], '0', `${timeout}: ${JSON.stringify(answer)}`);
    }
  });

  it('a bidi client that never reads its responses is not buffered without bound: the server stops reading its requests', async () => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': '/t.S/Big', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    stream.pause(); // never read
    const before = bigReceived;
    // 900 bytes a request: 2000 of them are well past the HTTP/2 flow-control window (64 KiB) that paces a client.
    const message = frameMessage(json.encode({ text: 'q'.repeat(900) }));
    for (let i = 0; i < 2000; i++) stream.write(message);
    await new Promise((r) => setTimeout(r, 1000));
    const received = bigReceived - before;
    session.destroy();
    // 2000 answers of 64 KiB would be 125 MiB held by the server for a client that takes none of them.
    assert.ok(received < 200, `the server read ${received} requests and buffered their answers`);
  });

  it('a request that ends inside a message is INTERNAL, not OK with the message dropped (bidi) or "no request message" (unary)', async () => {
    const cut = frameMessage(json.encode({ text: 'cut short' })).subarray(0, 9);
    for (const path of ['/t.S/Chat', '/t.S/Echo']) {
      const answer = await raw({ ':path': path }, Buffer.concat([frameMessage(json.encode({ text: 'whole' })), cut]));
      assert.equal(answer['grpc-status'], String(status.INTERNAL), `${path}: ${JSON.stringify(answer)}`);
      assert.match(String(answer['grpc-message']), /the request ended inside a message \(4 of 20 bytes\)/);
    }
  });

  it('a gzip bomb (100 bytes inflating to 50 KB) counts its inflated bytes against the budget, not just the compressed ones', async () => {
    const budget = new BodyBudget(10_000);
    const small = new GrpcServer(new Map<string, GrpcMethod>([['/t.S/Echo', { kind: 'unary', ...json, handle: () => Promise.resolve({}) }]]), {
      maxMessageLength: 100_000,
      budget,
    });
    const smallPort = await small.listen(0, '127.0.0.1');
    try {
      const bomb = gzipSync(json.encode({ text: ' '.repeat(50_000) }));
      const body = Buffer.concat([Buffer.from([1, 0, 0, 0, 0]), bomb]);
      body.writeUInt32BE(bomb.byteLength, 1);
      const session = connect(`http://127.0.0.1:${smallPort}`);
      const answer = await new Promise<Record<string, unknown>>((resolve) => {
        const stream = session.request({ ':method': 'POST', ':path': '/t.S/Echo', 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' });
        let seen: Record<string, unknown> = {};
        stream.on('response', (h) => (seen = { ...seen, ...h }));
        stream.on('trailers', (h: Record<string, unknown>) => (seen = { ...seen, ...h }));
        stream.on('data', () => undefined);
        stream.on('close', () => resolve(seen));
        stream.end(body);
      });
      session.close();
      assert.equal(answer['grpc-status'], String(status.RESOURCE_EXHAUSTED), JSON.stringify(answer));
      assert.match(decodeURIComponent(String(answer['grpc-message'])), /the most it buffers at once \(--max-buffered 10000\)/);
      for (let i = 0; i < 50 && budget.bytes !== 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(budget.bytes, 0, 'given back');
    } finally {
      await small.close();
    }
  });

  it('a content-type that only begins with application/grpc ("application/grpcfoo") is 415, and +proto or ;charset is gRPC', async () => {
    const body = frameMessage(json.encode({ text: 'z' }));
    assert.equal((await raw({ ':path': '/t.S/Echo', 'content-type': 'application/grpcfoo' }, body))[':status'], 415);
    for (const type of ['application/grpc+proto', 'application/grpc;charset=utf-8'])
      assert.equal((await raw({ ':path': '/t.S/Echo', 'content-type': type }, body))['grpc-status'], '0', type);
  });

  it('a bad message in the middle of a bidi stream ends it INTERNAL after the answers to the good ones before it', async () => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': '/t.S/Later', 'content-type': 'application/grpc', te: 'trailers' });
    let body = Buffer.alloc(0);
    let trailers: Record<string, unknown> = {};
    stream.on('data', (d: Buffer) => (body = Buffer.concat([body, d])));
    stream.on('response', (h) => (trailers = { ...h, ...trailers }));
    stream.on('trailers', (h: Record<string, unknown>) => (trailers = { ...trailers, ...h }));
    stream.on('error', () => undefined);
    const closed = new Promise((r) => stream.on('close', r));
    stream.end(Buffer.concat([frameMessage(json.encode({ text: 'a' })), frameMessage(Buffer.from('{')), frameMessage(json.encode({ text: 'b' }))]));
    await closed;
    session.close();
    const answers = [];
    const d = new MessageDeframer(1 << 20);
    for (const m of d.push(body)) answers.push(json.decode(m.bytes));
    assert.deepEqual(answers, [{ echo: 'a' }]);
    assert.equal(trailers['grpc-status'], String(status.INTERNAL), JSON.stringify(trailers));
    assert.match(String(trailers['grpc-message']), /cannot decode the request message/);
  });

  it("an error message too long for the client's header list (a 200 KB model name) is cut, not a reset stream with no status", async () => {
    const { error } = await unary('/t.S/Loud', {});
    assert.equal(error?.code, status.NOT_FOUND, String(error));
    assert.match(error.details, /^no model 'm+\.\.\.$/);
    assert.ok(error.details.length < 8192, String(error.details.length));
    assert.ok(error.details.length > 5000, String(error.details.length));
  });

  it(
    'a client that pipelines many calls on one connection and reads slowly gets every answer, and other connections are served meanwhile',
    { timeout: 30_000 },
    async () => {
      // The case of commit 5e7686d: the stream is paused by its waiting requests, then its answers back up; the
      // drain must resume it, or the call hangs until its deadline (here, until the test's timeout).
      const session = connect(`http://127.0.0.1:${port}`);
      session.on('error', () => undefined);
      const stream = session.request({ ':method': 'POST', ':path': '/t.S/Delayed', 'content-type': 'application/grpc', te: 'trailers' });
      stream.on('error', () => undefined);
      const deframer = new MessageDeframer(1 << 20);
      const answers: string[] = [];
      let trailers: Record<string, unknown> = {};
      stream.on('response', (h) => (trailers = { ...h, ...trailers }));
      stream.on('trailers', (h: Record<string, unknown>) => (trailers = { ...trailers, ...h }));
      stream.on('data', (d: Buffer) => {
        for (const m of deframer.push(d)) answers.push(String(json.decode(m.bytes).echo));
      });
      const closed = new Promise((r) => stream.on('close', r));
      stream.pause(); // not read for a while
      const count = 300;
      for (let i = 0; i < count; i++) stream.write(frameMessage(json.encode({ text: `${String(i).padStart(8, '0')}${'q'.repeat(890)}` })));
      stream.end();
      await new Promise((r) => setTimeout(r, 500));
      // Meanwhile, another connection is answered.
      const other = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
      try {
        assert.deepEqual((await unary('/t.S/Echo', { text: 'meanwhile' }, { client: other })).value, { echo: 'meanwhile' });
      } finally {
        other.close();
      }
      stream.resume();
      await closed;
      session.close();
      assert.equal(trailers['grpc-status'], '0', JSON.stringify(trailers));
      assert.deepEqual(
        answers,
        Array.from({ length: count }, (_, i) => String(i).padStart(8, '0')),
      );
    },
  );

  it('answers INTERNAL to an invalid grpc-timeout, UNIMPLEMENTED to a second message on a unary call, each with its message', async () => {
    const body = frameMessage(json.encode({ text: 'z' }));
    const badTimeout = await raw({ ':path': '/t.S/Echo', 'grpc-timeout': '5 seconds' }, body);
    assert.equal(badTimeout['grpc-status'], String(status.INTERNAL), JSON.stringify(badTimeout));
    assert.equal(decodeURIComponent(String(badTimeout['grpc-message'])), 'invalid grpc-timeout "5 seconds"');
    const twice = await raw({ ':path': '/t.S/Echo' }, Buffer.concat([body, body]));
    assert.equal(twice['grpc-status'], String(status.UNIMPLEMENTED), JSON.stringify(twice));
    assert.equal(decodeURIComponent(String(twice['grpc-message'])), 'a second request message on the unary method /t.S/Echo');
    const brotli = await raw({ ':path': '/t.S/Echo', 'grpc-encoding': 'br' }, body);
    assert.equal(
      decodeURIComponent(String(brotli['grpc-message'])),
      'the request is compressed with "br", which this server does not read (it reads identity,deflate,gzip)',
    );
  });

  it('a bidi client pipelining requests faster than they are answered is held back: the server stops reading them', async () => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': '/t.S/Never', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    const before = neverReceived;
    const message = frameMessage(json.encode({ text: 'q'.repeat(900) }));
    for (let i = 0; i < 2000; i++) stream.write(message);
    await new Promise((r) => setTimeout(r, 1000));
    const received = neverReceived - before;
    session.destroy();
    // 2000 requests waiting at once would be 1.8 MB held for a stream whose messages may be 1024 bytes each.
    assert.ok(received < 200, `the server took ${received} requests that wait for their answers`);
  });
});
