/**
 * The protobuf runtimes that could carry popef serve's gRPC messages,
 * measured on what the server decodes and encodes per MNIST request: a
 * ModelInferRequest with one 3,136-byte raw input and the
 * ModelInferResponse with one 40-byte output. protobufjs reads the .proto
 * at run time (what src/triton/inference-protocol.ts uses);
 * @bufbuild/protobuf (a dev dependency, here only) works from a descriptor
 * set that protoc compiles from the same files. Prints figures only.
 * Run: npx tsx test/bench/grpc-codec.ts (needs protoc).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create, createFileRegistry, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { protocolCodec } from '../../src/triton/inference-protocol.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const image = new Uint8Array(28 * 28 * 4).fill(3);
const request = {
  model_name: 'mnist',
  model_version: '',
  id: '',
  inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28] }],
  outputs: [{ name: 'output_labels' }],
  raw_input_contents: [image],
};
const response = {
  model_name: 'mnist',
  model_version: '1',
  id: '',
  outputs: [{ name: 'output_labels', datatype: 'FP32', shape: [1, 10] }],
  raw_output_contents: [new Uint8Array(40)],
};

function time(label: string, runs: number, body: () => void): void {
  for (let i = 0; i < 2000; i++) body();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) body();
  console.log(`${label.padEnd(52)} ${(((performance.now() - t0) * 1000) / runs).toFixed(2)} us`);
}

const N = 100_000;
const pbReq = protocolCodec('ModelInferRequest');
const pbRes = protocolCodec('ModelInferResponse');
const reqBytes = pbReq.encode(request);
time('protobufjs: decode request + encode response', N, () => {
  pbReq.decode(reqBytes);
  pbRes.encode(response);
});

const dir = mkdtempSync(join(tmpdir(), 'popef-bench-codec-'));
try {
  const setPath = join(dir, 'set.pb');
  execFileSync('protoc', ['-I', join(ROOT, 'schemas'), '--include_imports', `--descriptor_set_out=${setPath}`, 'grpc_service.proto']);
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(setPath)));
  const reqDesc = registry.getMessage('inference.ModelInferRequest');
  const resDesc = registry.getMessage('inference.ModelInferResponse');
  if (reqDesc === undefined || resDesc === undefined) throw new Error('descriptors missing');
  const bufResponse = create(resDesc, {
    modelName: 'mnist',
    modelVersion: '1',
    outputs: [{ name: 'output_labels', datatype: 'FP32', shape: [1n, 10n] }],
    rawOutputContents: [new Uint8Array(40)],
  });
  time('@bufbuild/protobuf: decode request + encode response', N, () => {
    fromBinary(reqDesc, reqBytes);
    toBinary(resDesc, bufResponse);
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
