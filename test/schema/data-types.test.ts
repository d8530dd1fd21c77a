// DATA_TYPE_INFO (src/schema/data-types.ts) is the one source of a dtype's
// facts. The places that cannot import it (the .fbs-generated enum, the JSON
// schemas, the specifications, the Python bridge and the simulated SDK) are
// checked against it here, so a dtype added to one and not the others fails
// by name.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fromNumbers, toNumbers } from '../../src/run/tensor.js';
import { readNpy, writeNpy } from '../../src/run/tensor-io/npy.js';
import { DATA_TYPE_INFO, DATA_TYPES, dataTypeOfCode, elementBytes, isFloat, type DataType } from '../../src/schema/data-types.js';
import { DataType as FbDataType } from '../../src/schema/generated/popef/open/data-type.js';
import { POPEF_TO_TRITON } from '../../src/triton/config-from-popef.js';
import { protocolElementBytes, protocolFromPopef } from '../../src/triton/protocol-datatypes.js';
import { ENUMS } from '../../src/triton/schema.js';
import { ROOT } from '../helpers.js';

const read = (path: string): Promise<string> => readFile(join(ROOT, path), 'utf8');

async function pythonFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.py')).map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Every dict literal of a Python file keyed by dtype names (it holds "F8152"), as [key, value] text pairs. */
function dtypeDicts(source: string): [string, string][][] {
  return [...source.matchAll(/\{[^{}]*"F8152"[^{}]*\}/g)].map((m) =>
    [...m[0].matchAll(/"(\w+)"\s*:\s*("[^"]*"|\d+)/g)].map((p) => [p[1] ?? '', p[2] ?? '']),
  );
}

/** NumPy spellings of one type ('bool', 'i1', '<i1') as the '|b1' / '<f4' form of DATA_TYPE_INFO. */
function numpyDescr(spelling: string, bytes: number): string {
  if (spelling === 'bool') return '|b1';
  const bare = /^[<>=|]/.test(spelling) ? spelling.slice(1) : spelling;
  return bytes === 1 ? `|${bare}` : spelling.startsWith('=') ? `<${bare}` : spelling;
}

/** The Python tables found under `dirs`: size tables (dtype -> int) and NumPy tables (dtype -> string). */
async function pythonTables(dirs: readonly string[]): Promise<{ file: string; entries: [string, string][] }[]> {
  const out: { file: string; entries: [string, string][] }[] = [];
  for (const dir of dirs) {
    for (const file of await pythonFiles(dir)) {
      for (const entries of dtypeDicts(await read(file))) out.push({ file, entries });
    }
  }
  return out;
}

describe('DATA_TYPE_INFO, the one dtype registry', () => {
  it('codes are unique and DATA_TYPES lists them in code order from 0', () => {
    assert.deepEqual(
      DATA_TYPES.map((d) => DATA_TYPE_INFO[d].code),
      DATA_TYPES.map((_, i) => i),
    );
    for (const d of DATA_TYPES) assert.equal(dataTypeOfCode(DATA_TYPE_INFO[d].code), d);
    assert.equal(dataTypeOfCode(DATA_TYPES.length), undefined);
  });

  it('the codes are those of schemas/popef.fbs (the generated enum)', () => {
    const generated = Object.entries(FbDataType).filter((e): e is [string, number] => typeof e[1] === 'number');
    assert.deepEqual(Object.fromEntries(generated), Object.fromEntries(DATA_TYPES.map((d) => [d, DATA_TYPE_INFO[d].code])));
  });

  it('the facts agree with each other: npy sizes, float kinds, Triton names in model_config.proto', () => {
    const tritonNames = new Set<string>(ENUMS['inference.DataType']);
    for (const d of DATA_TYPES) {
      const info: (typeof DATA_TYPE_INFO)[DataType] = DATA_TYPE_INFO[d];
      if (info.npy !== undefined) assert.equal(Number(info.npy.slice(2)), info.bytes, `${d}: npy ${info.npy}`);
      assert.equal(isFloat(d), info.numbers === 'float', d);
      if (info.triton !== undefined) assert.ok(tritonNames.has(info.triton), `${d}: ${info.triton} is not in model_config.proto`);
      assert.equal(POPEF_TO_TRITON[d], info.triton, d);
      const protocol = protocolFromPopef(d);
      assert.equal(protocol === undefined ? undefined : protocolElementBytes(protocol), info.triton === undefined ? undefined : info.bytes, d);
    }
  });

  it('every dtype with a number kind converts both ways and through .npy; the others are refused by name', () => {
    for (const d of DATA_TYPES) {
      const spec = { name: 't', dtype: d, shape: [2] };
      const info: (typeof DATA_TYPE_INFO)[DataType] = DATA_TYPE_INFO[d];
      if (info.numbers === undefined) {
        assert.throws(() => toNumbers({ ...spec, data: new Uint8Array(2 * elementBytes(d)) }), new RegExp(`dtype ${d} cannot be read`));
        assert.throws(() => fromNumbers(spec, [0, 1]), new RegExp(`dtype ${d} cannot be read`));
        continue;
      }
      const t = fromNumbers(spec, [0, 1]);
      assert.equal(t.data.byteLength, 2 * elementBytes(d), d);
      assert.deepEqual(Array.from(toNumbers(t)), [0, 1], d);
      assert.deepEqual(readNpy(writeNpy(t), 'x.npy', 't'), t, d);
    }
  });
});

describe('the copies of the dtype list outside TypeScript agree with DATA_TYPE_INFO', () => {
  for (const schema of ['schemas/dump.schema.json', 'schemas/manifest.schema.json']) {
    it(`${schema}: the dtype enum`, async () => {
      const json = JSON.parse(await read(schema)) as { definitions: { dtype: { enum: string[] } } };
      assert.deepEqual(json.definitions.dtype.enum, DATA_TYPES);
    });
  }

  it('schemas/FORMAT.md section 5.2: every code, name and size', async () => {
    const text = await read('schemas/FORMAT.md');
    const section = text.slice(text.indexOf('### 5.2 Data types'), text.indexOf('`TensorType` codes'));
    const rows = [...section.matchAll(/\|\s*(\d+)\s*\|\s*(\w+)\s*\|\s*(\d+)\s*\|/g)].map((m) => [Number(m[1]), m[2], Number(m[3])]);
    assert.deepEqual(
      rows.sort((a, b) => Number(a[0]) - Number(b[0])),
      DATA_TYPES.map((d) => [DATA_TYPE_INFO[d].code, d, DATA_TYPE_INFO[d].bytes]),
    );
  });

  it('src/run/PROTOCOL.md: the DTYPE names of a tensor announcement', async () => {
    const text = await read('src/run/PROTOCOL.md');
    const sentence = /where DTYPE is a PopEF data type name: ([^.]*)\./.exec(text)?.[1] ?? '';
    assert.deepEqual(
      [...sentence.matchAll(/`(\w+)`/g)].map((m) => m[1]),
      DATA_TYPES,
    );
  });

  it('the simulated SDK (fixtures/sim-sdk): the DataType enum codes', async () => {
    const source = await read('fixtures/sim-sdk/popef.py');
    const body = /class DataType\(enum\.Enum\):\n((?:\s+\w+ = \d+\n)+)/.exec(source)?.[1] ?? '';
    const codes = [...body.matchAll(/(\w+) = (\d+)/g)].map((m) => [m[1], Number(m[2])]);
    assert.deepEqual(
      codes,
      DATA_TYPES.map((d) => [d, DATA_TYPE_INFO[d].code]),
    );
  });

  it('the Python tables of the bridge and the simulated SDK: sizes and NumPy types, wherever they live', async () => {
    const tables = await pythonTables(['src/run/bridge', 'fixtures/sim-sdk']);
    const files = new Set(tables.map((t) => t.file.split('/').slice(0, 3).join('/')));
    // One table at least in each: a table that moved out of reach must not pass by being missed.
    assert.ok(
      [...files].some((f) => f.startsWith('src/run/bridge')),
      'no dtype table found under src/run/bridge',
    );
    assert.ok(
      [...files].some((f) => f.startsWith('fixtures/sim-sdk')),
      'no dtype table found under fixtures/sim-sdk',
    );
    for (const { file, entries } of tables) {
      const numeric = entries.every(([, v]) => /^\d+$/.test(v));
      const expected = DATA_TYPES.filter((d) => numeric || DATA_TYPE_INFO[d].npy !== undefined);
      assert.deepEqual(entries.map(([k]) => k).sort(), [...expected].sort(), `${file}: the dtypes of ${JSON.stringify(Object.fromEntries(entries))}`);
      for (const [key, value] of entries) {
        const d = key as DataType;
        const info: (typeof DATA_TYPE_INFO)[DataType] = DATA_TYPE_INFO[d];
        if (numeric) assert.equal(Number(value), info.bytes, `${file}: ${key}`);
        else assert.equal(numpyDescr(value.slice(1, -1), info.bytes), info.npy, `${file}: ${key}`);
      }
    }
  });
});
