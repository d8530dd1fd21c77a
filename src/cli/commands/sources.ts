import { resolve } from 'node:path';
import type { ByteSource } from '../../io/byte-source.js';
import { FileSource } from '../../io/file-source.js';
import { HttpSource } from '../../io/http-source.js';
import type { CliIo } from '../io.js';
import { ErrorCode, PopefError } from '../../errors.js';
import { MemorySource } from '../../io/memory-source.js';

/** The most of standard input a command holds in memory: a bigger model is better given as a file. */
const STDIN_LIMIT = 1024 * 1024 * 1024;

/** Whether a file argument names a URL (read with Range requests) rather than a local path. */
export function isUrl(name: string): boolean {
  return /^https?:\/\//i.test(name);
}

/** A file argument: a local path, "-" for standard input (read whole), or an http(s):// URL read with Range requests. */
export async function openSource(name: string, io: CliIo, options: { readAll?: boolean } = {}): Promise<ByteSource> {
  if (name === '-') {
    if (io.readStdin === undefined) throw new PopefError(ErrorCode.InvalidInput, 'standard input is not available here', {});
    const bytes = await io.readStdin(STDIN_LIMIT).catch((error: unknown) => {
      throw new PopefError(ErrorCode.InvalidInput, `cannot read standard input: ${(error as Error).message}`, {
        file: '<stdin>',
        suggestion: 'give the model as a file path instead of -',
      });
    });
    return new MemorySource(bytes, '<stdin>');
  }
  if (isUrl(name)) {
    const timeout = Number(io.env.POPEF_HTTP_TIMEOUT_MS ?? '');
    const deadline = Number(io.env.POPEF_HTTP_DEADLINE_MS ?? '');
    return HttpSource.open(name, {
      ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMs: timeout } : {}),
      // --verify reads every payload: no budget then, and no overall deadline unless one is set.
      ...(options.readAll === true ? { maxBytes: Infinity, deadlineMs: Infinity } : {}),
      ...(Number.isFinite(deadline) && deadline > 0 ? { deadlineMs: deadline } : {}),
    });
  }
  return FileSource.open(resolve(io.cwd, name), name);
}
