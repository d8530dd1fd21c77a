// The HTTP infer body decoder (src/serve/http-infer-body.ts) on its own: each
// row is a body as a client sends it and what Triton's HTTP frontend makes of
// it (server r24.10, http_server.cc), a request or its error message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromInferBody, inferResponse } from '../../src/serve/http-infer-body.js';
import type { InferResult } from '../../src/serve/inference-server.js';
import { RequestError } from '../../src/serve/status.js';

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const fp32 = (...values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);

/** A JSON header followed by binary sections, with its header length. */
function binaryBody(header: unknown, ...sections: Buffer[]): [Buffer, string] {
  const h = json(header);
  return [Buffer.concat([h, ...sections]), String(h.byteLength)];
}

const input = (extra: Record<string, unknown>): Record<string, unknown> => ({ name: 'x', datatype: 'FP32', shape: [2], ...extra });

describe("HTTP infer body: refused bodies, with Triton's status class and message", () => {
  const rows: [string, Buffer, string | undefined, RequestError['status'], RegExp][] = [
    ['an empty document', Buffer.from('  '), undefined, 'INTERNAL', /^failed to parse the request JSON buffer: The document is empty\. at 2$/],
    [
      'a NUL byte, which ends the document',
      Buffer.from('\0{"inputs": []}'),
      undefined,
      'INTERNAL',
      /^failed to parse the request JSON buffer: The document is empty\. at 0$/,
    ],
    ['a syntax error', Buffer.from('{"inputs": ['), undefined, 'INTERNAL', /^failed to parse the request JSON buffer: .* at 12$/],
    [
      'a root that is not an object, which has no inputs',
      json([null, null]),
      undefined,
      'INTERNAL',
      /^Unable to parse 'inputs': attempt to access non-existing object member 'inputs'$/,
    ],
    ['no inputs', json({}), undefined, 'INTERNAL', /^Unable to parse 'inputs': attempt to access non-existing object member 'inputs'$/],
    ['inputs not an array', json({ inputs: 3 }), undefined, 'INTERNAL', /^Unable to parse 'inputs': attempt to access JSON non-array as array$/],
    ['an input that is not an object, which has no data', json({ inputs: [[null, null]] }), undefined, 'INVALID_ARG', /But no field is set$/],
    ['an input with no data', json({ inputs: [input({})] }), undefined, 'INVALID_ARG', /But no field is set$/],
    [
      'an input with data and binary_data_size',
      json({ inputs: [input({ data: [1, 2], parameters: { binary_data_size: 8 } })] }),
      undefined,
      'INVALID_ARG',
      /But set 'data' 'binary_data_size'$/,
    ],
    [
      'a name that is not a string',
      json({ inputs: [{ name: 1, datatype: 'FP32', shape: [1], data: [1] }] }),
      undefined,
      'INTERNAL',
      /^Unable to parse 'name': attempt to access JSON non-string as string$/,
    ],
    [
      'a negative dimension',
      json({ inputs: [input({ shape: [-1], data: [1] })] }),
      undefined,
      'INTERNAL',
      /non-unsigned-integer as unsigned-integer/,
    ],
    [
      'a reserved parameter',
      json({ parameters: { triton_x: 1 }, inputs: [input({ data: [1, 2] })] }),
      undefined,
      'INVALID_ARG',
      /reserved for Triton usage and should not be specified\.$/,
    ],
    [
      'parameters that are not an object',
      json({ parameters: [1], inputs: [] }),
      undefined,
      'INTERNAL',
      /^failed to get request params\.: attempt to get members for non-object$/,
    ],
    [
      'a parameter of object type',
      json({ parameters: { a: { b: 1 } }, inputs: [] }),
      undefined,
      'INVALID_ARG',
      /^parameter 'a' has invalid type\. It should be either 'int', 'bool', or 'string'\.$/,
    ],
    [
      'a priority that is not unsigned',
      json({ parameters: { priority: -1 }, inputs: [] }),
      undefined,
      'INTERNAL',
      /^Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer$/,
    ],
    [
      'a sequence_end that is not a boolean',
      json({ parameters: { sequence_end: 1 }, inputs: [] }),
      undefined,
      'INTERNAL',
      /^Unable to parse 'sequence_end': attempt to access JSON non-boolean as boolean$/,
    ],
    [
      'binary data without the header length',
      json({ inputs: [input({ parameters: { binary_data_size: 8 } })] }),
      undefined,
      'INVALID_ARG',
      /must specify valid 'Infer-Header-Content-Length'/,
    ],
    ['a header length past the body', json({}), '999', 'INVALID_ARG', /^inference header size should be in range \(0, 2\), got: 999$/],
  ];
  for (const [what, body, headerLength, status, message] of rows) {
    it(what, async () => {
      await assert.rejects(
        () => fromInferBody('m', '', body, headerLength),
        (e: unknown) => e instanceof RequestError && e.status === status && message.test(e.message),
      );
    });
  }

  it('binary sections shorter or longer than their sizes', async () => {
    const [short, shortLength] = binaryBody({ inputs: [input({ parameters: { binary_data_size: 8 } })] }, fp32(1));
    await assert.rejects(
      () => fromInferBody('m', '', short, shortLength),
      /^RequestError: unexpected size for input 'x', expecting 4 additional bytes for model 'm'$/,
    );
    const [long, longLength] = binaryBody({ inputs: [input({ parameters: { binary_data_size: 8 } })] }, fp32(1, 2, 3));
    await assert.rejects(() => fromInferBody('m', '', long, longLength), /^RequestError: unexpected additional input data for model 'm'$/);
  });
});

describe('HTTP infer body: accepted bodies', () => {
  it('reads JSON data, the id and the requested outputs with their parameters', async () => {
    const body = json({
      id: 'r1',
      inputs: [input({ data: [1.5, -2] })],
      outputs: [
        { name: 'y', parameters: { classification: 2 } },
        { name: 'z', parameters: { binary_data: true } },
      ],
    });
    const { request, binaryOutputs } = await fromInferBody('m', '3', body, undefined);
    assert.equal(request.id, 'r1');
    assert.equal(request.modelVersion, '3');
    assert.deepEqual([...(request.inputs[0]?.data ?? [])], [...fp32(1.5, -2)]);
    assert.deepEqual(request.outputs, [
      { name: 'y', classCount: 2, binary: undefined },
      { name: 'z', classCount: 0, binary: true },
    ]);
    assert.equal(binaryOutputs, false);
  });

  it("takes binary sections in order, and binary_data_output as every output's default", async () => {
    const [body, headerLength] = binaryBody(
      {
        parameters: { binary_data_output: true },
        inputs: [input({ parameters: { binary_data_size: 8 } }), { ...input({ parameters: { binary_data_size: 4 } }), name: 'w', shape: [1] }],
      },
      fp32(1, 2),
      fp32(3),
    );
    const { request, binaryOutputs } = await fromInferBody('m', '', body, headerLength);
    assert.deepEqual(
      request.inputs.map((i) => [i.name, [...i.data]]),
      [
        ['x', [...fp32(1, 2)]],
        ['w', [...fp32(3)]],
      ],
    );
    assert.equal(binaryOutputs, true);
  });

  it('makes a header length of 0 a raw binary request, answered in binary', async () => {
    const { request, binaryOutputs } = await fromInferBody('m', '', fp32(1, 2), '0');
    assert.deepEqual([...(request.raw ?? [])], [...fp32(1, 2)]);
    assert.equal(binaryOutputs, true);
  });

  it("reads the header length as C's atoi does: the leading integer", async () => {
    const [body, headerLength] = binaryBody({ inputs: [input({ parameters: { binary_data_size: 8 } })] }, fp32(1, 2));
    const { request } = await fromInferBody('m', '', body, ` ${headerLength}abc`);
    assert.equal(request.inputs[0]?.data.byteLength, 8);
  });
});

describe('HTTP infer body: the sequence parameters', () => {
  it('reads sequence_id as a uint64 or a string, with sequence_start and sequence_end; absent when none is given', async () => {
    const read = async (parameters?: Record<string, unknown>): Promise<unknown> =>
      (await fromInferBody('m', '', json({ ...(parameters === undefined ? {} : { parameters }), inputs: [input({ data: [1, 2] })] }), undefined))
        .request.sequence;
    assert.deepEqual(await read({ sequence_id: 42, sequence_start: true }), { id: 42n, start: true, end: false });
    assert.deepEqual(await read({ sequence_id: 'abc', sequence_end: true }), { id: 'abc', start: false, end: true });
    assert.deepEqual(await read({ sequence_end: true }), { id: 0n, start: false, end: true });
    assert.equal(await read({ priority: 1 }), undefined);
    assert.equal(await read(), undefined);
  });
});

describe('HTTP infer response body', () => {
  it('writes JSON outputs in place and binary ones after the header, in order', () => {
    const data = new Uint8Array(fp32(4));
    const result: InferResult = {
      modelName: 'm',
      modelVersion: '1',
      id: '',
      outputs: [
        { name: 'a', datatype: 'FP32', shape: [1], data },
        { name: 'b', datatype: 'FP32', shape: [1], data, binary: true },
      ],
    };
    const { json: header, binary } = inferResponse(result, false);
    assert.deepEqual(JSON.parse(header.toString()), {
      model_name: 'm',
      model_version: '1',
      outputs: [
        { name: 'a', datatype: 'FP32', shape: [1], data: [4] },
        { name: 'b', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } },
      ],
    });
    assert.equal(binary.length, 1);
  });
});
