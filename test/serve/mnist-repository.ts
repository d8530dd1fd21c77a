import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fixture, runCli } from '../helpers.js';

/** The walkthrough's repository: MNIST scaffolded under `dir/models` with the client names digit_image and output_labels. */
export async function scaffoldMnist(dir: string): Promise<string> {
  const repo = join(dir, 'models');
  const r = await runCli(['scaffold', fixture('mnist/executable.popef'), '-r', repo, '-m', 'mnist', '--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels']);
  assert.equal(r.code, 0, r.stderr);
  return repo;
}
