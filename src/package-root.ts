import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding popef-toolkit's package.json, found by walking up
 * from this module: the same answer from src/ (tests), dist/ (the built
 * library) and the bundled CLI in dist/.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const name = (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name;
      if (name === 'popef-toolkit') return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('popef-toolkit: cannot find its own package.json');
    dir = parent;
  }
}
