/**
 * The transport floor of the serve benchmark: an HTTP server (node:http) and
 * a gRPC server (popef serve's own, src/serve/grpc-server.ts on node:http2,
 * with the protocol's codecs) that answer every
 * ModelInfer with a fixed MNIST-shaped answer and do nothing else. The same
 * client measured against it gives the latency of the transports alone, so
 * that the benchmark can say what popef serve itself adds.
 * Prints "HTTP on 127.0.0.1:P, gRPC on 127.0.0.1:Q" once listening.
 */
import { createServer } from 'node:http';
import { GrpcServer } from '../../src/serve/grpc-server.js';
import { protocolCodec, type ProtocolMessage } from '../../src/triton/inference-protocol.js';

const json = Buffer.from(
  JSON.stringify({
    model_name: 'mnist',
    model_version: '1',
    outputs: [{ name: 'output_labels', datatype: 'FP32', shape: [1, 10], parameters: { binary_data_size: 40 } }],
  }),
);
const body = Buffer.concat([json, Buffer.alloc(40)]);
const http = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Inference-Header-Content-Length': String(json.byteLength),
      'Content-Length': String(body.byteLength),
    });
    res.end(body);
  });
});
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));

const req = protocolCodec('ModelInferRequest');
const res = protocolCodec('ModelInferResponse');
const answer: ProtocolMessage = {
  model_name: 'mnist',
  model_version: '1',
  outputs: [{ name: 'output_labels', datatype: 'FP32', shape: [1, 10] }],
  raw_output_contents: [Buffer.alloc(40)],
};
const grpc = new GrpcServer(
  new Map([
    [
      '/inference.GRPCInferenceService/ModelInfer',
      { kind: 'unary', decode: (b: Buffer) => req.decode(b), encode: (v: ProtocolMessage) => res.encode(v), handle: () => Promise.resolve(answer) },
    ],
  ]),
  { maxMessageLength: 64 * 1024 * 1024 },
);
const grpcPort = await grpc.listen(0, '127.0.0.1');
const address = http.address();
process.stderr.write(`HTTP on 127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}, gRPC on 127.0.0.1:${grpcPort}\n`);
process.on('SIGTERM', () => process.exit(0));
