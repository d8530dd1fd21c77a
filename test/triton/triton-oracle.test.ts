// popef validate against the real Triton server. The corpus (test/triton/
// oracle/corpus.ts) and the configs popef scaffold writes are loaded by the
// tritonserver that nvidia-pytriton bundles, with a stand-in poplar backend;
// model by model, Triton refuses <=> popef validate reports an error of a
// rule that mirrors Triton, and Triton's message is among ours.
import assert from 'node:assert/strict';
import { mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { RULES, type Finding, type RuleId } from '../../src/triton/repository/findings.js';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { fixture, fixtureManifest, inTempDir, runCli } from '../helpers.js';
import { buildCorpus, type CorpusModel } from './oracle/corpus.js';
import {
  buildStandInBackends,
  findTritonServer,
  whyNoTritonOracle,
  loadInTriton,
  loadInTritonDespiteCrashes,
  releaseOf,
  type TritonVerdict,
} from './oracle/tritonserver.js';

/**
 * Where popef validate is known to differ from Triton, with the reason. The
 * test fails when one of these starts to agree (so the entry is removed) as
 * well as when anything else disagrees.
 */
const KNOWN_DISAGREEMENTS: Readonly<Record<string, string>> = {};

const binary = findTritonServer();
const unavailable = whyNoTritonOracle(binary);

interface Row {
  agree: number;
  disagree: number;
}

function table(rows: ReadonlyMap<string, Row>, stricter: ReadonlyMap<string, number>): string[] {
  const ids = [...new Set([...rows.keys(), ...stricter.keys()])].sort();
  const width = Math.max(...ids.map((i) => i.length), 'rule'.length);
  const out = [`${'rule'.padEnd(width)}  agree  disagree  stricter-than-Triton`];
  for (const id of ids) {
    const r = rows.get(id) ?? { agree: 0, disagree: 0 };
    out.push(`${id.padEnd(width)}  ${String(r.agree).padStart(5)}  ${String(r.disagree).padStart(8)}  ${String(stricter.get(id) ?? 0).padStart(20)}`);
  }
  return out;
}

/** The configs popef scaffold writes for every single-model fixture, plain and with --dynamic-batching. */
async function scaffoldAll(repo: string): Promise<CorpusModel[]> {
  const out: CorpusModel[] = [];
  const entries = (await fixtureManifest()).filter((f) => f.expect.ok && f.expect.models === 1);
  for (const [i, entry] of entries.entries()) {
    for (const variant of [[], ['--dynamic-batching'], ['--parameter', 'synchronous_execution=1']]) {
      const name = `scaffold__${String(i)}__${variant.length === 0 ? 'plain' : variant[0] === '--dynamic-batching' ? 'dynamic' : 'sync'}`;
      const files = [entry.path, ...(entry.with ?? [])].map(fixture);
      const r = await runCli(['scaffold', ...files, '-r', repo, '-m', name, ...variant]);
      assert.equal(r.code, 0, `scaffold of ${entry.path}: ${r.stderr}`);
      out.push({ name, origin: `popef scaffold ${entry.path} ${variant.join(' ')}`.trim() });
    }
  }
  return out;
}

describe('popef validate agrees with a real Triton server', { skip: process.env.CI === 'true' ? false : unavailable }, () => {
  it("on every model of the corpus: the verdict, and Triton's message among ours", { timeout: 600_000 }, async (t: TestContext) => {
    // On CI the oracle must run: a missing server is a failure, not a skip.
    assert.equal(unavailable, undefined, unavailable);
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      const backends = join(dir, 'backends');
      const models = [...(await buildCorpus(repo)), ...(await scaffoldAll(repo))];
      assert.ok(models.length >= 300, `the corpus holds ${models.length} models`);
      await buildStandInBackends(backends, ['poplar']);
      // The models that can crash tritonserver each go to a repository of their own, loaded alone.
      const alone = models.filter((m) => m.alone === true);
      for (const m of alone) {
        await mkdir(join(dir, 'alone', m.name), { recursive: true });
        await rename(join(repo, m.name), join(dir, 'alone', m.name, m.name));
      }
      const main = await loadInTriton(binary ?? '', repo, backends);
      const verdicts = new Map<string, TritonVerdict>(main.verdicts);
      const release = releaseOf(main.version);
      const ours = [...(await validateRepository(repo, { tritonVersion: release, backendDirectory: backends })).models];
      let crashes = 0;
      for (const m of alone) {
        const own = join(dir, 'alone', m.name);
        const run = await loadInTritonDespiteCrashes(binary ?? '', own, backends);
        crashes += run.crashes;
        const verdict = run.verdicts.get(m.name);
        if (verdict !== undefined) verdicts.set(m.name, verdict);
        ours.push(...(await validateRepository(own, { tritonVersion: release, backendDirectory: backends })).models);
      }
      const triton = { verdicts, version: main.version };

      const rows = new Map<string, Row>();
      const stricter = new Map<string, number>();
      const count = (id: string, agreed: boolean): void => {
        const r = rows.get(id) ?? { agree: 0, disagree: 0 };
        if (agreed) r.agree++;
        else r.disagree++;
        rows.set(id, r);
      };
      const disagreements: string[] = [];
      for (const m of models) {
        const verdict = triton.verdicts.get(m.name);
        assert.ok(verdict !== undefined, `Triton gave no verdict for ${m.name}`);
        const findings: readonly Finding[] = ours.find((r) => r.name === m.name)?.findings ?? [];
        const errors = findings.filter((f) => f.severity === 'error');
        const tritonErrors = errors.filter((f) => RULES[f.rule].mirrors !== null);
        const agreed = verdict.loaded ? tritonErrors.length === 0 : tritonErrors.some((f) => f.message.includes(verdict.message ?? '\u0000'));
        const ids: RuleId[] = [...new Set(tritonErrors.map((f) => f.rule))];
        if (ids.length === 0) count('(Triton loads the model)', agreed);
        for (const id of ids) count(id, agreed);
        if (verdict.loaded)
          for (const id of new Set(errors.filter((f) => RULES[f.rule].mirrors === null).map((f) => f.rule)))
            stricter.set(id, (stricter.get(id) ?? 0) + 1);
        if (!agreed) {
          disagreements.push(m.name);
          if (KNOWN_DISAGREEMENTS[m.name] === undefined) {
            t.diagnostic(
              `DISAGREE ${m.name} (${m.origin}): Triton ${verdict.loaded ? 'loads it' : `says: ${verdict.message ?? ''}`}; popef validate: ${tritonErrors.map((f) => `[${f.rule}] ${f.message}`).join(' | ') || 'no error'}`,
            );
          }
        }
      }
      t.diagnostic(`tritonserver ${triton.version} (Triton ${release}); ${models.length} models, ${models.length - disagreements.length} agree`);
      t.diagnostic(
        `${alone.length} models loaded each in a tritonserver of its own; tritonserver crashed ${String(crashes)} time${crashes === 1 ? '' : 's'} on them and was started again`,
      );
      for (const line of table(rows, stricter)) t.diagnostic(line);
      for (const [name, why] of Object.entries(KNOWN_DISAGREEMENTS)) t.diagnostic(`known disagreement ${name}: ${why}`);
      t.diagnostic("stricter-than-Triton: errors of popef-toolkit's own rules (name maps, PopEF files, parameters) on models Triton loads");

      assert.deepEqual(disagreements.sort(), Object.keys(KNOWN_DISAGREEMENTS).sort());
      // The rule families that motivated the port all meet Triton on some model.
      for (const id of [
        'config/ensemble-tensors',
        'io/batch-io',
        'config/sequence-batching',
        'config/ensemble',
        'instance-group/gpus',
        'io/reshape',
        'config/warmup',
        'config/label-file',
        'config/warmup-request',
        'config/ensemble-decoupled',
        'config/implicit-state',
      ] as const) {
        assert.ok((rows.get(id)?.agree ?? 0) > 0, `no model of the corpus exercises ${id}`);
      }
      // Every config popef scaffold writes loads in Triton.
      for (const m of models.filter((x) => x.name.startsWith('scaffold__')))
        assert.equal(triton.verdicts.get(m.name)?.loaded, true, `${m.origin}: ${triton.verdicts.get(m.name)?.message ?? ''}`);
    });
  });
});
