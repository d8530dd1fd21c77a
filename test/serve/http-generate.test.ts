// The generate extension's mapping of JSON fields to input tensors, on
// inputs the MNIST model of the differential test cannot show (dynamic
// dims, several inputs, BYTES); the shared cases are compared with the
// real Triton server in tritonclient.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromGenerateBody, generateResponse } from '../../src/serve/http-generate.js';
import { RequestError } from '../../src/serve/status.js';

const INPUTS = [
  { name: 'tokens', datatype: 'INT32', shape: [-1, 2, -1] },
  { name: 'prompt', datatype: 'BYTES', shape: [1] },
  { name: 'scale', datatype: 'FP32', shape: [1] },
];

const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

describe('generate: JSON fields to input tensors', () => {
  it('shapes a flat array by the fixed dims, gives the innermost -1 the rest and the others 1', () => {
    const r = fromGenerateBody('m', '', INPUTS, body({ tokens: [1, 2, 3, 4, 5, 6], scale: 0.5, prompt: 'hi' }));
    assert.deepEqual(
      r.inputs.map((t) => [t.name, t.shape]),
      [
        ['tokens', [1, 2, 3]],
        ['scale', [1]],
        ['prompt', [1]],
      ],
    );
    assert.deepEqual([...new Int32Array(new Uint8Array(r.inputs[0]?.data ?? []).buffer)], [1, 2, 3, 4, 5, 6]);
    // BYTES: a 4-byte length, then the bytes.
    assert.deepEqual([...(r.inputs[2]?.data ?? [])], [2, 0, 0, 0, 104, 105]);
  });

  it('takes inputs from parameters too, and every other key as a parameter of a primitive type', () => {
    const r = fromGenerateBody('m', '3', INPUTS, body({ id: 'x', parameters: { scale: [2], temperature: 0.7, stream: true }, max_tokens: 4 }));
    assert.deepEqual(
      r.inputs.map((t) => t.name),
      ['scale'],
    );
    assert.deepEqual([r.id, r.modelVersion], ['x', '3']);
  });

  it("refuses with Triton's class and message", () => {
    const refused = (value: unknown, status: string, message: string): void => {
      assert.throws(
        () => fromGenerateBody('m', '', INPUTS, Buffer.isBuffer(value) ? value : body(value)),
        (e: unknown) => e instanceof RequestError && e.status === status && e.message === message,
      );
    };
    refused({ tokens: [1, 2, 3] }, 'INVALID_ARG', "The schema can not convert input 'tokens' to tensor with proper shape");
    refused({ scale: [1, 2] }, 'INVALID_ARG', "The schema can not convert input 'scale' to tensor with proper shape");
    refused({ prompt: 5 }, 'INTERNAL', 'Unable to parse JSON bytes array: attempt to access JSON non-string as string');
    refused({ temperature: { a: 1 } }, 'INVALID_ARG', "parameter 'temperature' has invalid type. It should be either 'int', 'bool', or 'string'.");
    refused(
      { parameters: { scale: 'x' } },
      'INTERNAL',
      "Converting keyword: 'parameters': Unable to parse 'data': attempt to access JSON non-number as double",
    );
    refused(
      { scale: 1, parameters: { scale: 2 } },
      'INVALID_ARG',
      "Converting keyword: 'parameters': [request id: <id_unknown>] input 'scale' already exists in request",
    );
    refused(Buffer.from('"text"'), 'INTERNAL', 'attempt to get members for non-object');
  });

  it('refuses a model input named like the nested keyword', () => {
    assert.throws(() => fromGenerateBody('m', '', [{ name: 'parameters', datatype: 'FP32', shape: [1] }], body({ parameters: {} })), {
      message: "Keyword 'parameters' for nested schema also given as input tensor name",
    });
  });
});

describe('generate: the answer', () => {
  it('is one object in byte order of its keys, a one-element output as a scalar', () => {
    const f32 = (values: number[]): Uint8Array => new Uint8Array(new Float32Array(values).buffer);
    const text = generateResponse({
      modelName: 'm',
      modelVersion: '2',
      id: '',
      outputs: [
        { name: 'text_output', datatype: 'FP32', shape: [2], data: f32([0.5, 1.5]) },
        { name: 'Score', datatype: 'FP32', shape: [1], data: f32([2]) },
        { name: '7', datatype: 'BOOL', shape: [1], data: new Uint8Array([1]) },
      ],
    });
    // Numbers as RapidJSON's writer puts a double: 2.0, not 2.
    assert.equal(text, '{"7":true,"Score":2.0,"model_name":"m","model_version":"2","text_output":[0.5,1.5]}');
  });
});
