// `npm run lint:py`: ruff (pinned in .ci/run, which installs it into .venv)
// over the Python of the repository, with the settings of ruff.toml. Without
// ruff it says so and passes, except under CI=true, where it must run.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const candidates = [process.env.POPEF_RUFF, join(root, '.venv/bin/ruff'), 'ruff'].filter((c) => c !== undefined && c !== '');
const ruff = candidates.find((c) => (c.includes('/') ? existsSync(c) : spawnSync(c, ['--version']).status === 0));
if (ruff === undefined) {
  const message = 'ruff is not installed (bash .ci/run installs it into .venv; or set POPEF_RUFF)';
  if (process.env.CI === 'true') {
    process.stderr.write(`lint:py: ${message}\n`);
    process.exit(1);
  }
  process.stderr.write(`lint:py: skipped: ${message}\n`);
  process.exit(0);
}
const r = spawnSync(ruff, ['check', 'src/run/bridge', 'fixtures/sim-sdk', 'test/triton/qa/run_qa.py'], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
