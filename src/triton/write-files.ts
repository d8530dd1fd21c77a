import { rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { commitAtomically } from '../io/commit.js';
import { makeDirectories, type MadeDirectories } from '../io/make-directories.js';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { destinationExists, ioError } from '../errors.js';

/**
 * Writes several small files as one step: each goes to a temporary
 * file beside its target first, and only when all are written are they
 * moved into place. Existing files are an error unless `force`. Directories
 * it had to make are removed again when the write fails (a full disk must not
 * leave an empty DIR behind).
 */
export async function writeFilesAtomically(
  files: readonly { path: string; content: string | Uint8Array }[],
  options: { force?: boolean } = {},
): Promise<void> {
  if (options.force !== true) {
    for (const f of files) {
      const present = await stat(f.path).then(
        () => true,
        () => false,
      );
      if (present) throw destinationExists(f.path, 'file already exists', 'path');
    }
  }
  const temps: string[] = [];
  const made: MadeDirectories[] = [];
  await removeStaleSiblings(...files.map((f) => f.path));
  let done = false;
  try {
    for (const f of files) {
      made.push(
        await makeDirectories(dirname(f.path)).catch((error: unknown) => {
          throw ioError(error, dirname(f.path), 'create the directory');
        }),
      );
      const temp = tempSibling(f.path, 'tmp');
      // Listed before the write: one that fails part-way (disk full) has still made the file.
      temps.push(temp);
      await writeFile(temp, f.content, { flag: 'wx' }).catch((error: unknown) => {
        throw ioError(error, f.path, 'write');
      });
    }
    for (const [i, f] of files.entries()) await commitAtomically(temps[i] ?? '', f.path, { force: options.force });
    done = true;
  } finally {
    await Promise.all(temps.map((t) => rm(t, { force: true })));
    if (!done) for (const m of made.reverse()) await m.undo();
  }
}
