import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelSet } from '../../src/index.js';
import { buildReport } from '../../src/inspect/report.js';
import { blobTable } from '../../src/present/blob-table.js';
import { NO_COLOUR } from '../../src/present/colour.js';
import { renderRunText } from '../../src/present/run-report.js';
import type { RunReport } from '../../src/run/run-report.js';
import { fixture } from '../helpers.js';

const longest = (text: string): number => Math.max(...text.split('\n').map((l) => Array.from(l).length));

function runReport(): RunReport {
  const first = Array.from({ length: 10 }, (_, i) => 0.123456 * (i + 1));
  return {
    tool: 'popef-toolkit',
    plugin: 'cpu',
    model: 'm',
    executable: 'e',
    inputs: [],
    outputs: [{ name: 'a_rather_long_output_name/with:parts', anchor: 'x', dtype: 'F32', shape: [1, 10], min: 0.1, max: 1.2, mean: 0.6, first }],
    timing: { runs: 1, min: 1, p50: 1, p90: 1, p99: 1, max: 1, mean: 1, warmup: 0, totalMs: 1, batch: 1, samplesPerSecond: 1000 },
    comparison: null,
  };
}

describe('tables fit the terminal', () => {
  it("wraps the run table's cells within the width, keeping every value", () => {
    const wide = renderRunText(runReport(), NO_COLOUR, undefined);
    assert.ok(longest(wide) > 80, `the test needs a table wider than 80 columns, got ${longest(wide)}`);
    const narrow = renderRunText(runReport(), NO_COLOUR, 80);
    const table = narrow.split('\n').filter((l) => /^[┌│└├]/.test(l));
    assert.ok(
      table.every((l) => Array.from(l).length <= 80),
      table.join('\n'),
    );
    // The cells wrapped rather than lost: every digit of the first values is still there.
    assert.equal(
      table.join('').replace(/[^0-9]/g, '').length >=
        wide
          .split('\n')
          .filter((l) => /^[┌│└├]/.test(l))
          .join('')
          .replace(/[^0-9]/g, '').length,
      true,
    );
  });

  it('fits the blob table to a narrow terminal, and leaves it alone without a limit', async () => {
    const set = await ModelSet.open([fixture('mnist/executable.popef')]);
    try {
      const report = buildReport(set);
      const free = blobTable(report, NO_COLOUR);
      assert.ok(longest(free) > 60, String(longest(free)));
      assert.ok(longest(blobTable(report, NO_COLOUR, 60)) <= 60, blobTable(report, NO_COLOUR, 60));
      assert.equal(blobTable(report, NO_COLOUR, 500), free);
    } finally {
      await set.close();
    }
  });
});
