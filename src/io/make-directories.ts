import { existsSync, mkdirSync } from 'node:fs';
import { mkdir, rmdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * mkdir -p that can be taken back, with the real reason when it fails, and
 * that always returns.
 *
 * Node's own recursive mkdir is not used: on Node 20 it never returns for a
 * path under /proc (mkdir there says ENOENT, and it tries again forever:
 * `popef scaffold ... -r /proc/x` spun at 100% CPU), and on a read-only
 * file system it reports ENOENT rather than EROFS. Here the missing
 * directories are found first, from the path up to the first that exists,
 * and made one at a time, each failure as the system gave it (EROFS,
 * EACCES, ENOSPC, ENOENT, ENOTDIR). A write that fails after its
 * directories were made (disk full) must not leave them behind empty:
 * `undo` removes, deepest first, those this call made that are still empty.
 */
export interface MadeDirectories {
  /** Removes the directories this call created, where still empty; never throws. */
  undo(): Promise<void>;
}

const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** The directories of `path` that do not exist, outermost first: up to the first that does (a file in the way then fails the mkdir below it with ENOTDIR). */
function missingDirectories(path: string): string[] {
  const missing: string[] = [];
  for (let at = resolve(path); !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  return missing;
}

export async function makeDirectories(path: string): Promise<MadeDirectories> {
  const missing = missingDirectories(path);
  const made: string[] = [];
  for (const dir of missing) {
    try {
      await mkdir(dir);
      made.push(dir);
    } catch (error) {
      // Made meanwhile by someone else: theirs, not ours to undo.
      if (code(error) !== 'EEXIST') throw error;
    }
  }
  return {
    async undo(): Promise<void> {
      for (const dir of made.reverse()) {
        try {
          await rmdir(dir);
        } catch {
          return;
        }
      }
    },
  };
}

/** makeDirectories, synchronously and with `mode` for the directories it makes, without undo (the launcher's cache directory). */
export function makeDirectoriesSync(path: string, mode: number): void {
  for (const dir of missingDirectories(path)) {
    try {
      mkdirSync(dir, { mode });
    } catch (error) {
      if (code(error) !== 'EEXIST') throw error;
    }
  }
}
