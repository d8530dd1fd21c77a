// Inputs the config marks optional: Triton core's count rule and messages
// (ValidateRequestInputs, core r24.10 src/infer_request.cc), and popef
// serve's own refusal of a request that leaves one out (a Poplar executable
// takes every input). Triton's QA tests compare the messages with the real
// server (test/triton/qa/, L0_input_validation).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeRequest, type InferRequest, type RequestContract } from '../../src/serve/infer-request.js';
import type { ServedTensor } from '../../src/serve/served-model.js';

const tensor = (name: string, optional = false): ServedTensor => ({
  name,
  anchor: name,
  datatype: 'FP32',
  dims: [1],
  anchorShape: [1],
  ...(optional ? { optional: true } : {}),
});

const model = (optional: readonly boolean[]): RequestContract => ({
  name: 'm',
  maxBatchSize: 0,
  inputs: optional.map((o, i) => tensor(`IN${i}`, o)),
  outputs: [tensor('OUT')],
});

const request = (names: readonly string[]): InferRequest => ({
  modelName: 'm',
  modelVersion: '',
  id: '',
  inputs: names.map((name) => ({ name, datatype: 'FP32', shape: [1], data: new Uint8Array(4) })),
  outputs: [],
});

describe('optional inputs', () => {
  it("counts between the required inputs and all of them, with Triton's 'between' message", () => {
    assert.throws(
      () => normalizeRequest(model([false, false, true]), request(['IN0'])),
      (e: Error) =>
        e.message ===
        "[request id: <id_unknown>] expected number of inputs between 2 and 3 but got 1 inputs for model 'm'. Got input(s) ['IN0'], but missing required input(s) ['IN1']. Please provide all required input(s).",
    );
    assert.throws(
      () => normalizeRequest(model([false, true]), request(['IN0', 'IN1', 'IN2'])),
      (e: Error) => e.message.includes("expected number of inputs between 1 and 2 but got 3 inputs for model 'm'"),
    );
  });

  it('keeps the exact-count message for a model without optional inputs', () => {
    assert.throws(
      () => normalizeRequest(model([false, false]), request([])),
      (e: Error) =>
        e.message.includes("expected 2 inputs but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['IN0','IN1']"),
    );
  });

  it('refuses a request that leaves out an optional input, naming it; takes one that gives every input', () => {
    assert.throws(
      () => normalizeRequest(model([false, true]), request(['IN0'])),
      (e: Error) =>
        e.message.includes("input 'IN1' of model 'm' was not given: it is optional in the config, but a Poplar executable takes every input"),
    );
    assert.equal(normalizeRequest(model([false, true]), request(['IN0', 'IN1'])).tensors.size, 2);
  });

  it('still names an unknown input as Triton does, before the missing one', () => {
    assert.throws(
      () => normalizeRequest(model([false, true]), request(['IN0', 'X'])),
      (e: Error) => e.message === "unexpected inference input 'X' for model 'm'",
    );
  });
});
