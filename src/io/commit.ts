import { link, rename, unlink } from 'node:fs/promises';
import { ioError } from '../errors.js';

/**
 * The last step of every atomic write: a finished temporary file (a
 * tempSibling of `path`, temp-names.ts) takes the destination's name. With
 * `force`, rename() replaces whatever is there in one step. Without it,
 * link() refuses an existing file, so that a file that appeared while we
 * were writing is never clobbered; the temporary name is removed after.
 */
export async function commitAtomically(
  temp: string,
  path: string,
  options: { readonly force?: boolean; readonly what?: string } = {},
): Promise<void> {
  try {
    if (options.force === true) await rename(temp, path);
    else {
      await link(temp, path);
      await unlink(temp);
    }
  } catch (error) {
    throw ioError(error, path, `move the ${options.what ?? 'new file'} into place`);
  }
}
