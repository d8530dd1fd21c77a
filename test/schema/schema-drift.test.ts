import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TABLE_LAYOUTS, type TableName } from '../../src/schema/verify.js';
import { ROOT, inTempDir } from '../helpers.js';

async function tree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) {
      const path = join(e.parentPath, e.name);
      out.set(relative(dir, path), await readFile(path, 'utf8'));
    }
  }
  return out;
}

/** Table name -> [field name, type] in declaration order, read from the .fbs text. */
function fbsTables(text: string): Map<string, [string, string][]> {
  const tables = new Map<string, [string, string][]>();
  const withoutComments = text.replace(/\/\/.*$/gm, '');
  for (const m of withoutComments.matchAll(/table\s+(\w+)\s*\{([^}]*)\}/g)) {
    const fields: [string, string][] = [];
    for (const f of (m[2] ?? '').matchAll(/(\w+)\s*:\s*([\w[\]]+)/g)) fields.push([f[1] ?? '', f[2] ?? '']);
    tables.set(m[1] ?? '', fields);
  }
  return tables;
}

describe('schema drift', () => {
  it('src/schema/generated is exactly what scripts/generate-schema.sh produces', async () => {
    await inTempDir(async (dir) => {
      await promisify(execFile)('bash', [join(ROOT, 'scripts/generate-schema.sh'), dir], { cwd: ROOT });
      const fresh = await tree(dir);
      const committed = await tree(join(ROOT, 'src/schema/generated'));
      assert.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort());
      for (const [path, text] of fresh) assert.equal(committed.get(path), text, `${path} drifted: run npm run generate:schema`);
    });
  });

  it("the verifier's table layouts match schemas/popef.fbs field for field", async () => {
    const tables = fbsTables(await readFile(join(ROOT, 'schemas/popef.fbs'), 'utf8'));
    assert.deepEqual([...tables.keys()].sort(), Object.keys(TABLE_LAYOUTS).sort());
    for (const [name, fields] of tables) {
      const layout = TABLE_LAYOUTS[name as TableName].map((f): [string, string] => [f.name, f.fbsType]);
      assert.deepEqual(layout, fields, `table ${name}`);
    }
  });
});
