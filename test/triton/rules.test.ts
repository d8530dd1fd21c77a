import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ModelConfig } from '../../src/triton/model-config.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { printPbtxt } from '../../src/triton/pbtxt-printer.js';
import { RULES } from '../../src/triton/repository/findings.js';
import { FIXTURES, ROOT, inTempDir, runCli } from '../helpers.js';

describe("README's rule table", () => {
  it('lists every rule once, with its severity and the Triton function it mirrors', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const rows = [
      ...readme.matchAll(
        /^\| `([a-z-]+\/[a-z-]+)` \| (error|warning|info) \| .* \| (\(popef-toolkit\)|`([^`]+)`(?: \(hardware-dependent\))?) \| .* \|$/gm,
      ),
    ];
    const listed = rows.map((r) => r[1]);
    assert.deepEqual([...listed].sort(), Object.keys(RULES).sort());
    for (const r of rows) {
      const info = RULES[r[1] as keyof typeof RULES];
      assert.equal(r[2], info.severity, r[1]);
      assert.equal(r[4] ?? null, info.mirrors, r[1]);
    }
  });
});

/** The cases that showed the old rules short of Triton's; each must now be an error with Triton's message. */
const CASES: readonly { why: string; change: (c: ModelConfig) => ModelConfig; message: string }[] = [
  {
    why: 'a BATCH_MAX_ELEMENT_COUNT_AS_SHAPE batch input without source_input',
    change: (c) => ({ ...c, batch_input: [{ kind: 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', target_name: ['N'], data_type: 'TYPE_INT32' }] }),
    message: "batch input kind 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE' expects 1 source input, got 0 for mnist",
  },
  {
    why: 'a BATCH_SCATTER_WITH_INPUT_SHAPE batch output without source',
    change: (c) => ({ ...c, batch_output: [{ kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', target_name: ['output_labels'] }] }),
    message: "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got 0 for mnist",
  },
  {
    why: 'two CONTROL_SEQUENCE_END control tensors',
    change: (c) => ({
      ...c,
      sequence_batching: {
        control_input: ['E1', 'E2'].map((name) => ({ name, control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [0, 1] }] })),
      },
    }),
    message: 'sequence batching specifies multiple CONTROL_SEQUENCE_END tensors for mnist',
  },
  {
    why: 'a control without false/true values',
    change: (c) => ({ ...c, sequence_batching: { control_input: [{ name: 'S', control: [{ kind: 'CONTROL_SEQUENCE_START' }] }] } }),
    message: "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START for mnist",
  },
  {
    why: 'ensemble_scheduling on a model that is not an ensemble',
    change: (c) => ({
      ...c,
      ensemble_scheduling: { step: [{ model_name: 'x', input_map: [{ key: 'a', value: 'b' }], output_map: [{ key: 'c', value: 'd' }] }] },
    }),
    message: "ensemble scheduling cannot be set for model 'mnist' whose platform is not ensemble",
  },
  {
    why: 'an instance group listing gpus: [-1]',
    change: (c) => ({ ...c, instance_group: [{ kind: 'KIND_GPU', gpus: [-1] }] }),
    message:
      'instance group mnist_0 of model mnist specifies invalid or unsupported gpu id -1. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: ',
  },
  {
    why: 'a reshape whose variable-size dims differ',
    change: (c) => ({ ...c, input: [{ ...(c.input?.[0] ?? {}), dims: [-1, 28, 28], reshape: { shape: [784] } }] }),
    message: "model input 'digit_image' has different size for dims and reshape for mnist",
  },
];

describe('popef validate: the rule families Triton checks and the old rules missed', () => {
  for (const c of CASES) {
    it(c.why, async () => {
      await inTempDir(async (dir) => {
        await cp(join(FIXTURES, 'repos/clean'), dir, { recursive: true });
        const path = join(dir, 'mnist/config.pbtxt');
        const config = parsePbtxt(await readFile(path, 'utf8')).message;
        await writeFile(path, printPbtxt(c.change(config), { tritonVersion: 'latest' }));
        const r = await runCli(['validate', dir, '--format', 'json', '--triton-version', '24.10']);
        assert.equal(r.code, 1, r.stdout);
        const report = JSON.parse(r.stdout) as { repositories: { models: { findings: { severity: string; message: string }[] }[] }[] };
        const messages = report.repositories[0]?.models[0]?.findings.filter((f) => f.severity === 'error').map((f) => f.message) ?? [];
        assert.ok(messages.includes(c.message), messages.join('\n'));
      });
    });
  }
});

describe('the file rules (label files and warmup data) on what the probe reports', () => {
  const config: ModelConfig = {
    input: [
      { name: 'a', data_type: 'TYPE_FP32', dims: [2, 2] },
      { name: 'b', data_type: 'TYPE_INT8', dims: [3] },
    ],
    output: [{ name: 'y', label_filename: 'labels' }],
    model_warmup: [
      {
        name: 'w',
        batch_size: 1,
        inputs: [
          { key: 'a', value: { data_type: 'TYPE_FP32', dims: [2, 2], input_data_file: 'a.bin' } },
          { key: 'b', value: { data_type: 'TYPE_INT8', dims: [3] } },
        ],
      },
    ],
  };

  it('names the reader error Triton prints, the bytes it expects, and a sample without data', async () => {
    const { checkModelFiles, filesNamedBy } = await import('../../src/triton/repository/file-rules.js');
    assert.deepEqual(filesNamedBy(config).sort(), ['labels', join('warmup', 'a.bin')].sort());
    const findings = checkModelFiles(
      config,
      '/repo/m',
      new Map([
        ['labels', { error: 'Is a directory' }],
        [join('warmup', 'a.bin'), { size: 15 }],
      ]),
    );
    assert.deepEqual(
      findings.map((f) => f.message),
      [
        'failed to open text file for read /repo/m/labels: Is a directory',
        '[request id: <id_unknown>] warmup setting expects 16 bytes, but the data provided from a.binonly has 15 bytes',
        "[request id: <id_unknown>] warmup setting expects input 'b' to have input_data_type set",
      ],
    );
    // A file the probe did not see is reported as missing; a batch size of 0 skips the sample.
    assert.equal(checkModelFiles(config, '/repo/m', new Map()).filter((f) => f.message.includes('No such file or directory')).length, 2);
    assert.deepEqual(
      checkModelFiles({ ...config, output: [], model_warmup: [{ ...config.model_warmup?.[0], batch_size: 0 }] }, '/repo/m', new Map()),
      [],
    );
  });

  it('prints a label path outside the model directory as Triton joins it, beside the request checks of a sample', async () => {
    const { checkModelFiles } = await import('../../src/triton/repository/file-rules.js');
    const withOptional: ModelConfig = {
      name: 'm',
      max_batch_size: 4,
      input: [
        { name: 'a', data_type: 'TYPE_FP32', dims: [2] },
        { name: 'o', data_type: 'TYPE_FP32', dims: [1], optional: true },
      ],
      output: [{ name: 'y', label_filename: '../labels.txt' }],
      model_warmup: [
        { name: 'none', batch_size: 1, inputs: [] },
        {
          name: 'shape',
          batch_size: 1,
          inputs: [
            { key: 'a', value: { data_type: 'TYPE_FP32', dims: [3], zero_data: true } },
            { key: 'z', value: { data_type: 'TYPE_FP32', dims: [1], zero_data: true } },
          ],
        },
      ],
    };
    const messages = checkModelFiles(withOptional, '/repo/m', new Map()).map((f) => `${f.rule}: ${f.message}`);
    assert.deepEqual(messages, [
      'config/label-file: failed to open text file for read /repo/m/../labels.txt: No such file or directory',
      "config/warmup-request: [request id: <id_unknown>] expected number of inputs between 1 and 2 but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['a']. Please provide all required input(s).",
      "config/warmup-unknown-input: warmup sample 'shape' of model 'm' gives input 'z', which is not an input of the model; Triton passes it on unchecked and the model never reads it",
      "config/warmup-request: [request id: <id_unknown>] unexpected shape for input 'a' for model 'm'. Expected [-1,2], got [1,3]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.",
    ]);
  });
});
