import { ErrorCode, PopefError } from '../errors.js';
import type { ByteSource } from './byte-source.js';

/**
 * FileSource in the viewer page, which has no file system: a path given
 * where a ByteSource was expected is refused with what to give instead.
 * The page opens files through io/blob-source.ts and URLs through
 * io/http-source.ts; scripts/build.mjs puts this module in place of
 * file-source.ts in the page's bundle only.
 */
// A class with one static method, as the FileSource it stands in for is called (FileSource.open).
// eslint-disable-next-line @typescript-eslint/no-extraneous-class
export class FileSource {
  static open(path: string, name = path): Promise<ByteSource> {
    return Promise.reject(
      new PopefError(ErrorCode.InvalidInput, `a path (${name}) cannot be opened in a web page`, {
        file: name,
        suggestion: 'pick the file, drop it on the page, or give an http(s) URL',
      }),
    );
  }
}
