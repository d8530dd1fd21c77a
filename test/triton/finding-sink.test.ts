import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FindingSink } from '../../src/triton/repository/finding-sink.js';
import type { Finding, RawFinding } from '../../src/triton/repository/findings.js';

// How the sink folds findings into their cause, without a directory tree.

const noMap: RawFinding = { rule: 'layout/name-map-missing', message: 'no map in m/1', file: 'm/1', unusable: ['name-map'], version: 'm/1' };
const missing = (version: string, n = 0): RawFinding => ({ rule: 'popef/missing-anchor', message: `x${n} is no anchor`, path: 'input[0]', version });
const shape = (f: Finding): [string, string[]] => [f.rule, (f.consequences ?? []).map((c) => c.rule)];

describe('FindingSink: findings by cause', () => {
  it('folds a later finding of a rule that reads what the cause left unusable, in the same version only', () => {
    const sink = new FindingSink({ model: 'm', configFile: 'm/config.pbtxt' });
    sink.add(missing('m/1', 0)); // before the cause: it stands on its own
    sink.add(noMap);
    sink.addAll([missing('m/1', 1), missing('m/2', 2), { rule: 'io/dims', message: 'Triton says so', version: 'm/1' }]);
    assert.deepEqual(sink.close().map(shape), [
      ['popef/missing-anchor', []],
      ['layout/name-map-missing', ['popef/missing-anchor']],
      ['popef/missing-anchor', []],
      ['io/dims', []],
    ]);
  });

  it('a config cause folds in every version; a warning is never a cause', () => {
    const sink = new FindingSink({ model: 'm', strict: false });
    sink.add({ rule: 'layout/version-name', message: 'a warning that claims too much', unusable: ['popef'], version: 'm/1' });
    sink.add(missing('m/1'));
    sink.add({ rule: 'config/parse', message: 'does not parse', unusable: ['config'] });
    sink.add(missing('m/2'));
    const out = sink.close();
    assert.deepEqual(out.map(shape), [
      ['layout/version-name', []],
      ['popef/missing-anchor', []],
      ['config/parse', ['popef/missing-anchor']],
    ]);
    assert.equal(out[0]?.unusable, undefined);
    assert.deepEqual(out[2]?.unusable, ['config']);
  });

  it('keeps its causes across a thread (state and resume), and folds the closing count of a folded rule', () => {
    const first = new FindingSink({ model: 'm', limit: 2 });
    first.add(noMap);
    first.add(missing('m/1', 1));
    const resumed = FindingSink.resume({ model: 'm', limit: 2 }, structuredClone(first.state()));
    for (let n = 2; n <= 4; n++) resumed.add(missing('m/1', n));
    const out = resumed.close();
    assert.equal(out.length, 1);
    const consequences = out[0]?.consequences ?? [];
    assert.deepEqual(
      consequences.map((c) => c.message),
      ['x1 is no anchor', 'x2 is no anchor', "2 more finding(s) of this rule in model 'm' are not listed (4 in all)"],
    );
    // close() leaves the sink as it was: closing twice gives the same.
    assert.deepEqual(resumed.close(), out);
  });
});
