// Typed contents of a gRPC ModelInferRequest (int_contents, fp32_contents,
// ...) become tensor bytes as Triton's frontend makes them
// (grpc/infer_handler.cc): for INT8 and INT16 it keeps the low bytes of each
// int32, so a value that does not fit wraps instead of failing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromModelInferRequest } from '../../src/serve/grpc-transport.js';
import { protocolCodec } from '../../src/triton/inference-protocol.js';

const codec = protocolCodec('ModelInferRequest');

function bytesOf(datatype: string, contents: Record<string, unknown[]>): number[] {
  const count = Object.values(contents)[0]?.length ?? 0;
  const message = codec.decode(codec.encode({ model_name: 'm', inputs: [{ name: 'x', datatype, shape: [count], contents }] }));
  const input = fromModelInferRequest(message).inputs[0];
  assert.ok(input !== undefined);
  return [...input.data];
}

describe('gRPC typed contents', () => {
  it('keeps the low bytes of values too wide for INT8, INT16, UINT8 and UINT16, as Triton does', () => {
    assert.deepEqual(bytesOf('INT8', { int_contents: [300, -200, 127, -1] }), [44, 56, 127, 255]);
    assert.deepEqual(bytesOf('INT16', { int_contents: [70000, -1] }), [0x70, 0x11, 0xff, 0xff]);
    assert.deepEqual(bytesOf('UINT8', { uint_contents: [261, 255] }), [5, 255]);
    assert.deepEqual(bytesOf('UINT16', { uint_contents: [65537] }), [1, 0]);
  });

  it('writes every other type little-endian at its own width', () => {
    assert.deepEqual(bytesOf('INT32', { int_contents: [-2] }), [0xfe, 0xff, 0xff, 0xff]);
    assert.deepEqual(bytesOf('UINT32', { uint_contents: [4294967295] }), [255, 255, 255, 255]);
    assert.deepEqual(bytesOf('INT64', { int64_contents: ['-9223372036854775808'] }), [0, 0, 0, 0, 0, 0, 0, 0x80]);
    assert.deepEqual(bytesOf('UINT64', { uint64_contents: ['18446744073709551615'] }), [255, 255, 255, 255, 255, 255, 255, 255]);
    assert.deepEqual(bytesOf('FP32', { fp32_contents: [1] }), [0, 0, 0x80, 0x3f]);
    assert.deepEqual(bytesOf('FP64', { fp64_contents: [-2] }), [0, 0, 0, 0, 0, 0, 0, 0xc0]);
    assert.deepEqual(bytesOf('BOOL', { bool_contents: [true, false] }), [1, 0]);
  });

  it("refuses contents of another type than the input, in Triton's words", () => {
    assert.throws(
      () => bytesOf('FP32', { int_contents: [1] }),
      /unexpected explicit tensor data for input tensor 'x' for model 'm' of type 'INT32', expected datatype 'FP32'/,
    );
  });
});

describe('gRPC sequence parameters', () => {
  const sequenceOf = (parameters: Record<string, unknown>): unknown =>
    fromModelInferRequest(codec.decode(codec.encode({ model_name: 'm', parameters, inputs: [] }))).sequence;

  it('reads sequence_id from int64_param (a negative one wraps to uint64, as Triton keeps it) or string_param', () => {
    assert.deepEqual(sequenceOf({ sequence_id: { int64_param: 7 }, sequence_start: { bool_param: true } }), { id: 7n, start: true, end: false });
    assert.deepEqual(sequenceOf({ sequence_id: { int64_param: -1 }, sequence_end: { bool_param: true } }), {
      id: 2n ** 64n - 1n,
      start: false,
      end: true,
    });
    assert.deepEqual(sequenceOf({ sequence_id: { string_param: 'abc' } }), { id: 'abc', start: false, end: false });
    assert.equal(sequenceOf({ priority: { uint64_param: 1 } }), undefined);
  });
});
