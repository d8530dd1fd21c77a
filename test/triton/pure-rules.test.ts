// The layout, version, name-map, backend and own rules as pure functions,
// and the one FindingSink every rule's findings go through: no directory
// tree needed (the end-to-end cases are the fixtures of validate.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backendLibraryRules, backendSearchPath } from '../../src/triton/repository/backend-rules.js';
import { FindingSink } from '../../src/triton/repository/finding-sink.js';
import {
  notCrossCheckedRule,
  popefBackendRule,
  versionFileRules,
  versionNameRules,
  versionPolicyRules,
} from '../../src/triton/repository/layout-rules.js';
import { versionVerdict } from '../../src/triton/repository/model-directory.js';
import { anchorsByName, nameMapRules } from '../../src/triton/repository/name-map-rules.js';
import {
  dynamicBatchingWithoutBatch,
  duplicateIoNames,
  fileEscapesModel,
  instanceGroupCount,
  modelMetricsRules,
  parameterRules,
  unsafeNames,
} from '../../src/triton/repository/own-rules.js';

const rules = (fs: readonly { rule: string }[]): string[] => fs.map((f) => f.rule);

describe('layout rules', () => {
  it('version names: leading zeros and non-numbers ignored, a numeric prefix misread; plain numbers fine', () => {
    const found = versionNameRules({ name: 'm', candidates: ['1', '01', 'old', '2b'].map(versionVerdict) });
    assert.deepEqual(
      found.map((f) => [f.file, f.message]),
      [
        ['m/01', "ignore version directory '01' which contains leading zeros in its directory name"],
        ['m/old', "ignore version directory 'old' which fails to convert to integral number"],
        ['m/2b', "version directory '2b' is read by Triton as version 2 (only its numeric prefix counts)"],
      ],
    );
  });

  it('version policy: a specific version that is absent; nothing selected', () => {
    const candidates = [versionVerdict('1')];
    assert.deepEqual(
      versionPolicyRules(
        { name: 'm', candidates, selected: [{ dir: '1', version: 1, files: [], popefFiles: [] }] },
        { version_policy: { specific: { versions: [1] } } },
      ),
      [],
    );
    const missing = versionPolicyRules({ name: 'm', candidates, selected: [] }, { version_policy: { specific: { versions: [2] } } });
    assert.deepEqual(rules(missing), ['layout/specific-version-missing', 'layout/no-version']);
    assert.equal(missing[0]?.message, "version 2 is specified for model 'm', but the version directory is not present");
    assert.equal(missing[1]?.path, 'version_policy');
  });

  it('version files: a poplar version needs a name_map.json, a .popef under --require-popef (named executable.popef); others need neither', () => {
    const poplar = { backend: 'poplar' };
    assert.deepEqual(rules(versionFileRules('m', { dir: '1', files: [], popefFiles: [] }, poplar)), ['layout/name-map-missing']);
    assert.deepEqual(rules(versionFileRules('m', { dir: '1', files: [], popefFiles: [] }, poplar, { requirePopef: true })), [
      'layout/popef-missing',
      'layout/name-map-missing',
    ]);
    assert.deepEqual(rules(versionFileRules('m', { dir: '1', files: ['model.popef', 'name_map.json'], popefFiles: ['model.popef'] }, poplar)), [
      'layout/popef-name',
    ]);
    assert.deepEqual(versionFileRules('m', { dir: '1', files: ['executable.popef', 'name_map.json'], popefFiles: ['executable.popef'] }, poplar), []);
    assert.deepEqual(versionFileRules('m', { dir: '1', files: ['model.onnx'], popefFiles: [] }, { backend: 'onnxruntime' }), []);
    // PopEF files make it a poplar version whatever the config says.
    assert.deepEqual(
      rules(versionFileRules('m', { dir: '1', files: ['executable.popef'], popefFiles: ['executable.popef'] }, { backend: 'python' })),
      ['layout/name-map-missing'],
    );
  });

  it("popef/not-cross-checked: one notice for all of a model's reasons; an error under --require-popef", () => {
    const notice = notCrossCheckedRule(
      'm',
      [
        { kind: 'no-popef', versionPath: 'm/1' },
        { kind: 'foreign', file: 'm/2/executable.popef' },
      ],
      false,
    );
    assert.equal(
      notice.message,
      "anchors not cross-checked for model 'm': no PopEF file in m/1; m/2/executable.popef is not in the PopEF open layout (written by the Poplar SDK: its encoding is unpublished)",
    );
    assert.equal(notice.severity, undefined);
    assert.equal(notice.file, 'm/1');
    assert.match(notice.hint ?? '', /--require-popef makes this an error$/);
    assert.equal(notCrossCheckedRule('m', [{ kind: 'foreign', file: 'm/1/e.popef' }], true).severity, 'error');
  });

  it('popef/backend: PopEF files under another backend', () => {
    const selected = [{ dir: '1', version: 1, files: ['executable.popef'], popefFiles: ['executable.popef'] }];
    assert.deepEqual(popefBackendRule({ name: 'm', selected }, { backend: 'poplar' }), []);
    assert.equal(popefBackendRule({ name: 'm', selected }, {})[0]?.message, "model 'm' holds PopEF files but its backend is not set");
    assert.equal(
      popefBackendRule({ name: 'm', selected }, { backend: 'python' })[0]?.message,
      'model \'m\' holds PopEF files but its backend is "python"',
    );
  });
});

describe('name-map rules', () => {
  const config = { input: [{ name: 'x' }], output: [{ name: 'y' }] };

  it('a map that is not JSON: one finding, no map', () => {
    const r = nameMapRules('{"a": ', 'm/1/name_map.json', 'm', config);
    assert.equal(r.map, undefined);
    assert.deepEqual(rules(r.findings), ['name-map/invalid']);
    assert.equal(r.findings[0]?.file, 'm/1/name_map.json');
    assert.equal(r.findings[0].message, 'name_map.json is not valid JSON: Unexpected end of JSON input');
  });

  it('schema errors stop the tensor checks; duplicates are found at the token level', () => {
    assert.deepEqual(rules(nameMapRules('{"a": 3}', 'f', 'm', config).findings), ['name-map/invalid']);
    const dup = nameMapRules('{"a": "x", "a": "x", "b": "x", "c": "y"}', 'f', 'm', config);
    assert.deepEqual(rules(dup.findings), ['name-map/duplicate-key', 'name-map/duplicate-value']);
    assert.deepEqual(dup.findings[0]?.at, { line: 1, column: 12 });
  });

  it('values that are no config tensor, config tensors the map leaves out (placed by config path)', () => {
    const r = nameMapRules('{"a": "x", "b": "z"}', 'f', 'm', config);
    assert.deepEqual(rules(r.findings), ['name-map/unknown-tensor', 'name-map/unmapped-tensor']);
    assert.equal(r.findings[1]?.path, 'output[0]');
    assert.equal(r.findings[1].file, undefined);
    assert.deepEqual(
      [...anchorsByName(r.map)],
      [
        ['x', 'a'],
        ['z', 'b'],
      ],
    );
  });
});

describe('backend-library rules', () => {
  const searched = backendSearchPath('/r/m', ['1'], '/b', 'poplar');

  it('searches the version directories, the model directory, then the backend directory', () => {
    assert.deepEqual(searched, ['/r/m/1', '/r/m', '/b/poplar']);
  });

  it("Triton's messages for a library not found, with and without runtime; a runtime that escapes once found", () => {
    assert.equal(
      backendLibraryRules({ backend: 'poplar' }, { model: 'm', backendDirectory: '/b', searched })[0]?.message,
      "unable to find backend library for backend 'poplar', try specifying runtime on the model configuration.",
    );
    assert.equal(
      backendLibraryRules({ backend: 'poplar', runtime: 'lib.so' }, { model: 'm', backendDirectory: '/b', searched })[0]?.message,
      "unable to find backend library 'lib.so' for model 'm', searched: '/r/m/1' '/r/m' '/b/poplar' ",
    );
    assert.deepEqual(
      backendLibraryRules({ backend: 'poplar' }, { model: 'm', backendDirectory: '/b', searched, found: '/b/poplar/libtriton_poplar.so' }),
      [],
    );
    assert.deepEqual(
      rules(backendLibraryRules({ backend: 'poplar', runtime: '../x.so' }, { model: 'm', backendDirectory: '/b', searched, found: '/b/x.so' })),
      ['backend/runtime-escapes'],
    );
    assert.deepEqual(backendLibraryRules({}, { model: 'm', backendDirectory: '/b', searched }), []);
  });
});

describe("the tool's own config rules", () => {
  it('each rule function finds its own defect and nothing on a clean config', () => {
    const clean = { backend: 'poplar', max_batch_size: 1, input: [{ name: 'x' }], output: [{ name: 'y' }] };
    for (const rule of [dynamicBatchingWithoutBatch, parameterRules, fileEscapesModel, modelMetricsRules, instanceGroupCount, duplicateIoNames])
      assert.deepEqual(rule(clean, 'm'), []);
    assert.deepEqual(rules(dynamicBatchingWithoutBatch({ max_batch_size: 0, dynamic_batching: {} }, 'm')), ['config/dynamic-batching-without-batch']);
    const params = parameterRules(
      {
        backend: 'poplar',
        parameters: [
          { key: 'timeout_ns', value: {} },
          { key: 'timeout_ns', value: {} },
          { key: 'timeout_n', value: {} },
        ],
      },
      'm',
    );
    assert.deepEqual(rules(params), ['config/duplicate-parameter', 'config/unknown-parameter']);
    assert.deepEqual(rules(fileEscapesModel({ output: [{ name: 'y', label_filename: '../l.txt' }], default_model_filename: '/abs' }, 'm')), [
      'config/file-escapes-model',
      'config/file-escapes-model',
    ]);
    assert.equal(
      modelMetricsRules({ model_metrics: { metric_control: [{ metric_identifier: {} }] } }, 'm')[0]?.message,
      "metric identifier must specify non-empty 'family'",
    );
    assert.equal(
      instanceGroupCount({ instance_group: [{ count: 0 }] }, 'm')[0]?.message,
      'instance group m_0 of model m has count 0; Triton replaces it with the default (1)',
    );
    assert.deepEqual(rules(duplicateIoNames({ input: [{ name: 'x' }, { name: 'x' }], output: [{ name: 'x' }] }, 'm')), ['io/duplicate-name']);
  });
});

describe('names/model and names/tensor', () => {
  it('warn on what HTTP clients and the Poplar backend handle badly, naming the characters and the rule', () => {
    const io = (name: string) => ({ name, data_type: 'TYPE_FP32' as const, dims: [1] });
    assert.deepEqual(unsafeNames({ name: 'mnist-2.v1_x~', input: [io('digit_image')], output: [io('output.labels-1')] }, 'm'), []);
    const found = unsafeNames({ name: 'my model%', input: [io('softmax/Softmax:0')], output: [io('out put'), io('ok')] }, 'm');
    assert.deepEqual(
      found.map((f) => [f.rule, f.path]),
      [
        ['names/model', 'name'],
        ['names/tensor', 'input[0]'],
        ['names/tensor', 'output[0]'],
      ],
    );
    assert.match(
      found[0]?.message ?? '',
      /^model name 'my model%' has ' ' \(space\), '%': Triton's HTTP server .* does not percent-decode it, and tritonclient\.http percent-encodes/,
    );
    assert.match(
      found[1]?.message ?? '',
      /^input 'softmax\/Softmax:0' of m has '\/', ':': the Poplar Triton backend's guide renames such names with name_map\.json/,
    );
    assert.match(found[1]?.hint ?? '', /--name 'ANCHOR=new_name'/);
    // A '/' in a model name: Triton's route takes the name up to it.
    assert.deepEqual(rules(unsafeNames({ name: 'a/b' }, 'm')), ['names/model']);
    // Non-ASCII letters are percent-encoded by tritonclient too.
    assert.deepEqual(rules(unsafeNames({ name: 'modèle' }, 'm')), ['names/model']);
  });
});

describe('FindingSink', () => {
  it('--strict makes warnings errors; positions come from the config path or its nearest parent; files default to the config', () => {
    const positions = new Map([['input[0]', { line: 3, column: 1 }]]);
    const sink = new FindingSink({ model: 'm', strict: true, configFile: 'm/config.pbtxt', positions });
    sink.add({ rule: 'instance-group/count', message: 'w', path: 'input[0].dims' });
    sink.add({ rule: 'name-map/invalid', message: 'e', file: 'm/1/name_map.json', at: { line: 1, column: 2 } });
    assert.deepEqual(sink.close(), [
      { rule: 'instance-group/count', severity: 'error', message: 'w', model: 'm', file: 'm/config.pbtxt', line: 3, column: 1 },
      { rule: 'name-map/invalid', severity: 'error', message: 'e', model: 'm', file: 'm/1/name_map.json', line: 1, column: 2 },
    ]);
  });

  it('lists `limit` findings of a rule and counts the rest in one closing finding; `wanted` says ahead which will be listed', () => {
    const sink = new FindingSink({ model: 'm', limit: 2 });
    const wanted = sink.wanted();
    assert.deepEqual([wanted('io/dims'), wanted('io/dims'), wanted('io/dims'), wanted('io/name')], [true, true, false, true]);
    for (let i = 0; i < 5; i++) sink.add({ rule: 'io/dims', message: `d${i}` });
    const out = sink.close();
    assert.deepEqual(
      out.map((f) => f.message),
      ['d0', 'd1', "3 more finding(s) of this rule in model 'm' are not listed (5 in all)"],
    );
    const repository = new FindingSink({ limit: 1 });
    repository.addAll([
      { rule: 'layout/hidden-directory', message: 'a', file: '.a' },
      { rule: 'layout/hidden-directory', message: 'b', file: '.b' },
    ]);
    assert.match(repository.close()[1]?.message ?? '', /1 more finding\(s\) of this rule in the repository/);
  });
});
