import { mkdir, rmdir } from 'node:fs/promises';
import { dirname, relative, sep, join } from 'node:path';

/**
 * mkdir -p that can be taken back, with the real reason when it fails.
 *
 * Node's recursive mkdir reports ENOENT when the directory cannot be made
 * on a read-only file system (it looks for the path after the EROFS), so
 * then the first missing directory is made alone, which gives EROFS, EACCES
 * or ENOSPC as it is. And a write that fails after its directories were made
 * (disk full) must not leave them behind empty: `undo` removes, deepest
 * first, those this call made that are still empty.
 */
export interface MadeDirectories {
  /** Removes the directories this call created, where still empty; never throws. */
  undo(): Promise<void>;
}

export async function makeDirectories(path: string): Promise<MadeDirectories> {
  let first: string | undefined;
  try {
    first = await mkdir(path, { recursive: true });
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? await realReason(path, error) : error;
  }
  const made: string[] = [];
  if (first !== undefined) {
    let at = first;
    made.push(at);
    for (const part of relative(first, path)
      .split(sep)
      .filter((p) => p !== '')) {
      at = join(at, part);
      made.push(at);
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

/** The error of making the first missing ancestor of `path` by itself; `fallback` if that works or says ENOENT too. */
async function realReason(path: string, fallback: unknown): Promise<unknown> {
  const chain: string[] = [];
  for (let at = path; dirname(at) !== at; at = dirname(at)) chain.unshift(at);
  for (const dir of chain) {
    try {
      await mkdir(dir);
      await rmdir(dir);
      return fallback;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      return code === 'ENOENT' ? fallback : error;
    }
  }
  return fallback;
}
