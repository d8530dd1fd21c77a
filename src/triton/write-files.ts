import { link, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, ioError } from '../errors.js';

/**
 * Writes several small files as one step: each goes to a temporary
 * file beside its target first, and only when all are written are they
 * moved into place. Existing files are an error unless `force`.
 */
export async function writeFilesAtomically(files: readonly { path: string; content: string | Uint8Array }[], options: { force?: boolean } = {}): Promise<void> {
  if (options.force !== true) {
    for (const f of files) {
      const present = await stat(f.path).then(
        () => true,
        () => false,
      );
      if (present) throw new PopefError(ErrorCode.Exists, 'file already exists', { file: f.path, suggestion: 'choose another path, or pass force: true to replace it' });
    }
  }
  const temps: string[] = [];
  await removeStaleSiblings(...files.map((f) => f.path));
  try {
    for (const f of files) {
      await mkdir(dirname(f.path), { recursive: true }).catch((error: unknown) => {
        throw ioError(error, dirname(f.path), 'create the directory');
      });
      const temp = tempSibling(f.path, 'tmp');
      await writeFile(temp, f.content, { flag: 'wx' }).catch((error: unknown) => {
        throw ioError(error, f.path, 'write');
      });
      temps.push(temp);
    }
    for (const [i, f] of files.entries()) {
      const temp = temps[i] ?? '';
      try {
        if (options.force === true) await rename(temp, f.path);
        else {
          await link(temp, f.path);
          await rm(temp);
        }
      } catch (error) {
        throw ioError(error, f.path, 'move the new file into place');
      }
    }
  } finally {
    await Promise.all(temps.map((t) => rm(t, { force: true })));
  }
}
