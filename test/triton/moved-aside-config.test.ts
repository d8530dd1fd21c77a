// validate names a config an interrupted `popef scaffold --force` moved
// aside at the repository root. It used to list the root once per model
// without a config.pbtxt: a repository of N such models cost N listings
// of N entries. The root is now listed once while it is unchanged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { inTempDir } from '../helpers.js';

const ASIDE = '.m007.popef-staging-host-4194313-0000000000cd.old-config.pbtxt';

describe('models without config.pbtxt, one of them moved aside by an interrupted scaffold', () => {
  it('lists the repository root once for them all, and names the moved-aside config for its own model only', async () => {
    await inTempDir(async (repo) => {
      for (let i = 0; i < 40; i++) await mkdir(join(repo, `m${String(i).padStart(3, '0')}`, '1'), { recursive: true });
      await writeFile(join(repo, ASIDE), 'name: "m007"\n');
      const listed: string[] = [];
      const original = fs.readdirSync;
      mock.method(fs, 'readdirSync', (...args: Parameters<typeof fs.readdirSync>) => {
        listed.push(String(args[0]));
        return original(...args);
      });
      // The modules' named imports of readdirSync follow node:fs once its ES exports are synced.
      syncBuiltinESMExports();
      let report;
      try {
        report = await validateRepository(repo, { threads: 1 });
      } finally {
        mock.restoreAll();
        syncBuiltinESMExports();
      }
      const missing = report.models.map((m) => m.findings.find((f) => f.rule === 'layout/config-missing')?.message);
      assert.equal(missing.length, 40);
      assert.match(missing[7] ?? '', /moved it to \.m007\.popef-staging-.*\.old-config\.pbtxt in the repository/);
      for (const [i, message] of missing.entries())
        if (i !== 7) assert.match(message ?? '', /has no config\.pbtxt: Triton auto-completes/, `model ${i}`);
      // Once to find the models (validate.ts), once for the moved-aside configs.
      // The mock saw the root listed at all (else the bound below would hold of a listing it cannot see).
      assert.ok(listed.includes(repo), `readdirSync never listed the root: ${JSON.stringify(listed.slice(0, 5))}`);
      assert.ok(listed.filter((p) => p === repo).length <= 2, `the root was listed ${listed.filter((p) => p === repo).length} times`);
    });
  });
});
