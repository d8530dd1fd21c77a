import { resolve } from 'node:path';
import type { ByteSource } from '../../io/byte-source.js';
import { FileSource } from '../../io/file-source.js';
import { HttpSource } from '../../io/http-source.js';
import type { CliIo } from '../io.js';

/** A file argument: a local path, or an http(s):// URL read with Range requests. */
export async function openSource(name: string, io: CliIo, options: { readAll?: boolean } = {}): Promise<ByteSource> {
  if (/^https?:\/\//i.test(name)) {
    const timeout = Number(io.env.POPEF_HTTP_TIMEOUT_MS ?? '');
    return HttpSource.open(name, {
      ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMs: timeout } : {}),
      // --verify reads every payload: no budget then.
      ...(options.readAll === true ? { maxBytes: Infinity } : {}),
    });
  }
  return FileSource.open(resolve(io.cwd, name), name);
}
