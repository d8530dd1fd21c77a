import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PNG } from 'pngjs';
import { PopefError } from '../../src/errors.js';
import type { TensorSpec } from '../../src/run/plugin-api.js';
import { fromNumbers, toNumbers } from '../../src/run/tensor.js';
import { loadInput, randomTensor } from '../../src/run/tensor-io/inputs.js';
import { readNpy, writeNpy } from '../../src/run/tensor-io/npy.js';
import { DATA_TYPES } from '../../src/schema/model.js';
import { inTempDir } from '../helpers.js';

const NUMERIC = DATA_TYPES.filter((d) => !d.startsWith('F8'));
const sample = (dtype: string): number[] =>
  dtype === 'BOOL'
    ? [0, 1, 1, 0, 1, 0]
    : dtype.startsWith('F')
      ? [0, -1.5, 2.25, 1024, -0.5, 3]
      : dtype.startsWith('U')
        ? [0, 1, 2, 200, 7, 9]
        : [0, -1, 2, -100, 7, 9];

describe('.npy', () => {
  it('round-trips every numeric dtype, and reads back what it wrote', () => {
    for (const dtype of NUMERIC) {
      const t = fromNumbers({ name: 'x', dtype, shape: [2, 3] }, sample(dtype));
      const back = readNpy(writeNpy(t), 'x.npy');
      assert.equal(back.dtype, dtype);
      assert.deepEqual(back.shape, [2, 3]);
      assert.deepEqual(Array.from(toNumbers(back)), sample(dtype), dtype);
    }
  });

  it('round-trips random shapes and values (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...NUMERIC), fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 4 }), (dtype, shape) => {
        const n = shape.reduce((p, d) => p * d, 1);
        const t = fromNumbers(
          { name: 'x', dtype, shape },
          Array.from({ length: n }, (_, i) => i % 2),
        );
        const back = readNpy(writeNpy(t), 'x.npy');
        assert.deepEqual(back.shape, shape);
        assert.ok(Buffer.from(back.data).equals(Buffer.from(t.data)));
        assert.equal(writeNpy(t).byteLength % 64, t.data.byteLength % 64, 'the header is padded to 64 bytes');
      }),
    );
  });

  it('reads 0-d and 1-d shapes and refuses Fortran order and unknown dtypes', () => {
    const scalar = fromNumbers({ name: 's', dtype: 'F64', shape: [] }, [2.5]);
    assert.deepEqual(readNpy(writeNpy(scalar), 's.npy').shape, []);
    const good = Buffer.from(writeNpy(fromNumbers({ name: 'v', dtype: 'S32', shape: [3] }, [1, 2, 3])));
    assert.match(good.toString('latin1', 10, 80), /'shape': \(3,\)/);
    const fortran = Buffer.from(good.toString('latin1').replace("'fortran_order': False", "'fortran_order': True "), 'latin1');
    assert.throws(() => readNpy(fortran, 'f.npy'), /Fortran/);
    const complex = Buffer.from(good.toString('latin1').replace("'<i4'", "'<c8'"), 'latin1');
    assert.throws(() => readNpy(complex, 'c.npy'), /dtype <c8 is not supported/);
    assert.throws(() => readNpy(Buffer.from('not numpy'), 'n.npy'), /magic/);
  });
});

describe('input files', () => {
  const spec: TensorSpec = { name: 'input', dtype: 'F32', shape: [1, 1, 2, 3] };

  async function withFile(name: string, content: string | Uint8Array, run: (path: string) => Promise<void>): Promise<void> {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, name), content);
      await run(join(dir, name));
    });
  }

  it('reads JSON as nested arrays, as {shape, data}, and as a flat list', async () => {
    const values = [1, 2, 3, 4, 5, 6];
    for (const json of [
      [
        [
          [
            [1, 2, 3],
            [4, 5, 6],
          ],
        ],
      ],
      { shape: [1, 1, 2, 3], data: values },
      values,
    ]) {
      await withFile('x.json', JSON.stringify(json), async (path) => {
        assert.deepEqual(Array.from(toNumbers(await loadInput(spec, path, 'digit_image'))), values);
      });
    }
    await withFile('x.json', JSON.stringify([[1, 2], [3]]), async (path) => {
      await assert.rejects(loadInput(spec, path, 'digit_image'), /ragged/);
    });
    await withFile('x.json', JSON.stringify([[1, 2, 3]]), async (path) => {
      await assert.rejects(loadInput(spec, path, 'digit_image'), /input "digit_image": holds shape \[1, 3\], but the model expects \[1, 1, 2, 3\]/);
    });
  });

  it('reads raw .bin of exactly the right size, and says how many bytes were needed otherwise', async () => {
    const t = fromNumbers(spec, [1, 2, 3, 4, 5, 6]);
    await withFile('x.bin', t.data, async (path) => {
      assert.ok(Buffer.from((await loadInput(spec, path, 'x')).data).equals(Buffer.from(t.data)));
    });
    await withFile('x.bin', t.data.subarray(1), async (path) => {
      await assert.rejects(loadInput(spec, path, 'x'), /holds 23 bytes, but F32 \[1, 1, 2, 3\] needs exactly 24/);
    });
  });

  it('checks a .npy against the expected dtype and shape, naming both', async () => {
    await withFile('x.npy', writeNpy(fromNumbers({ name: 'x', dtype: 'F64', shape: [1, 1, 2, 3] }, [1, 2, 3, 4, 5, 6])), async (path) => {
      await assert.rejects(
        loadInput(spec, path, 'digit_image'),
        (e: unknown) =>
          e instanceof PopefError && /input "digit_image" is F64 \[1, 1, 2, 3\], but the model expects F32 \[1, 1, 2, 3\]/.test(e.message),
      );
    });
  });

  it('reads PNG into NCHW, NHWC and HW layouts, scaled like ToTensor, with mean/std', async () => {
    const png = new PNG({ width: 3, height: 2 });
    for (let i = 0; i < 6; i++) png.data.set([i * 50, i * 50, i * 50, 255], 4 * i);
    const bytes = PNG.sync.write(png);
    await withFile('x.png', bytes, async (path) => {
      const gray = await loadInput(spec, path, 'x');
      assert.deepEqual(
        Array.from(toNumbers(gray)).map((v) => Math.round(v * 1000) / 1000),
        [0, 0.196, 0.392, 0.588, 0.784, 0.98],
      );
      const rgb = await loadInput({ name: 'x', dtype: 'U8', shape: [1, 2, 3, 3] }, path, 'x');
      assert.deepEqual(Array.from(toNumbers(rgb)).slice(0, 6), [0, 0, 0, 50, 50, 50]);
      const hw = await loadInput({ name: 'x', dtype: 'F32', shape: [2, 3] }, path, 'x', { scale: 1, mean: [100], std: [2] });
      assert.deepEqual(Array.from(toNumbers(hw)), [-50, -25, 0, 25, 50, 75]);
      const batch = await loadInput({ name: 'x', dtype: 'U8', shape: [2, 1, 2, 3] }, path, 'x');
      assert.deepEqual(Array.from(toNumbers(batch)), [0, 50, 100, 150, 200, 250, 0, 50, 100, 150, 200, 250]);
      await assert.rejects(
        loadInput({ name: 'x', dtype: 'F32', shape: [1, 1, 28, 28] }, path, 'digit_image'),
        /the image is 3x2, but the input is \[1, 1, 28, 28\]/,
      );
    });
  });

  it('refuses unknown file types', async () => {
    await withFile('x.csv', '1,2', async (path) => {
      await assert.rejects(loadInput(spec, path, 'x'), /the file type \.csv is not one popef run reads/);
    });
  });
});

describe('random inputs', () => {
  it('are the same for the same seed, differ for another, and stay in range', () => {
    const spec: TensorSpec = { name: 'x', dtype: 'S32', shape: [100] };
    const a = toNumbers(randomTensor(spec, { seed: 7, range: [-3, 3] }));
    assert.deepEqual(a, toNumbers(randomTensor(spec, { seed: 7, range: [-3, 3] })));
    assert.notDeepEqual(a, toNumbers(randomTensor(spec, { seed: 8, range: [-3, 3] })));
    assert.ok(a.every((v) => v >= -3 && v <= 3 && Number.isInteger(v)));
    assert.ok(new Set(a).size > 3);
    const f = toNumbers(randomTensor({ name: 'f', dtype: 'F32', shape: [50] }, { seed: 1 }));
    assert.ok(f.every((v) => v >= 0 && v < 1));
  });
});
