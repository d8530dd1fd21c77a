// config/newer-than-target below the top of a config: a field two messages
// down and an enum value one down, for targets either side of the releases
// that added them (the golden case has one field one message down).
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { inTempDir } from '../helpers.js';

const CONFIG = `name: "m"
backend: "onnxruntime"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 2 ] } ]
sequence_batching {
  state [ { input_name: "s_in" output_name: "s_out" data_type: TYPE_FP32 dims: [ 1 ] use_growable_memory: true } ]
}
batch_input [ { kind: BATCH_ITEM_SHAPE target_name: "shape" data_type: TYPE_FP32 source_input: "x" } ]
`;

/** What the config/newer-than-target findings for `target` name, in order: the message after the file's name. */
async function newer(repo: string, target: string): Promise<string[]> {
  const report = await validateRepository(repo, { tritonVersion: target });
  return report.models.flatMap((m) =>
    m.findings.filter((f) => f.rule === 'config/newer-than-target').map((f) => f.message.slice(f.message.indexOf('config.pbtxt: ') + 14)),
  );
}

const FIELD = 'Message type "inference.ModelSequenceBatching.State" has no field named "use_growable_memory".';
const VALUE = 'Unknown enumeration value of "BATCH_ITEM_SHAPE" for field "kind".';

describe('config/newer-than-target', () => {
  it('finds a field two messages down and an enum value one down, for targets before them and not after', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'm', '1'), { recursive: true });
      await writeFile(join(dir, 'm', 'config.pbtxt'), CONFIG);
      // use_growable_memory: 23.11; BATCH_ITEM_SHAPE: 22.03 (src/triton/schema.ts). Twice over: nothing kept from one target leaks into the next.
      for (let round = 0; round < 2; round++) {
        assert.deepEqual(await newer(dir, '22.02'), [VALUE, FIELD]);
        assert.deepEqual(await newer(dir, '23.10'), [FIELD]);
        assert.deepEqual(await newer(dir, '23.11'), []);
        assert.deepEqual(await newer(dir, 'latest'), []);
      }
    });
  });
});
