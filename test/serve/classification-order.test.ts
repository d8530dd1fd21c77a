import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { stdSort } from '../../src/serve/std-sort.js';
import { inTempDir } from '../helpers.js';

/**
 * Triton orders class_count results with std::sort and `probs[a] > probs[b]`
 * (server src/classification.cc); with a NaN that is no strict weak order,
 * so only libstdc++'s own algorithm says what comes out. The oracle is that
 * algorithm, compiled with g++ (which Triton's builds use).
 */

const ORACLE = String.raw`
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <vector>
int main() {
  size_t n;
  while (std::scanf("%zu", &n) == 1) {
    std::vector<double> v(n);
    for (auto& x : v) { char w[32]; std::scanf("%31s", w); x = std::strtod(w, nullptr); }
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&v](size_t a, size_t b) { return v[a] > v[b]; });
    for (size_t i : idx) std::printf("%zu ", i);
    std::printf("\n");
  }
}`;

describe('classification order', () => {
  it("class_count with NaN orders as Triton's std::sort does (not inf:0, -inf:1, nan:2)", async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'sort.cc'), ORACLE);
      const built = spawnSync('g++', ['-O1', '-o', join(dir, 'sort'), join(dir, 'sort.cc')], { encoding: 'utf8' });
      assert.equal(built.status, 0, built.error?.message ?? built.stderr);
      const values = fc.oneof(fc.constantFrom(Number.NaN, Infinity, -Infinity, 0, 1, 0.5), fc.double({ noNaN: true, min: -10, max: 10 }));
      const cases = fc.sample(fc.array(values, { minLength: 0, maxLength: 200 }), 400);
      cases.push(
        [Number.NaN, Infinity, -Infinity],
        [Infinity, Number.NaN, -Infinity, 0.5],
        Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? Number.NaN : i % 5)),
      );
      const input = cases
        .map(
          (c) => `${c.length} ${c.map((x) => (Number.isNaN(x) ? 'nan' : x === Infinity ? 'inf' : x === -Infinity ? '-inf' : String(x))).join(' ')}`,
        )
        .join('\n');
      const run = spawnSync(join(dir, 'sort'), { input: `${input}\n`, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      assert.equal(run.status, 0, run.stderr);
      const expected = run.stdout.trimEnd().split('\n');
      cases.forEach((c, i) => {
        const order = Array.from({ length: c.length }, (_, k) => k);
        stdSort(order, (a, b) => (c[a] ?? 0) > (c[b] ?? 0));
        assert.equal(
          order
            .map((k) => `${k} `)
            .join('')
            .trimEnd(),
          (expected[i] ?? '').trimEnd(),
          `values ${JSON.stringify(c.map(String))}`,
        );
      });
    });
  });
});
