import { basename, dirname, join } from 'node:path';
import { ErrorCode, PopefError, isNotFound } from '../../errors.js';
import { FILE_LIMITS, isDirectorySync, readRegularFile } from '../../io/local-file.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import type { Tensor } from '../plugin-api.js';
import { readNpy, writeNpy } from './npy.js';

/**
 * Outputs as files: `popef run --save-outputs DIR` writes DIR/NAME.npy per
 * output (NAME the client-facing name), and `--expect DIR` reads them back.
 */

/** File names for outputs: anchor and client names may hold "/" or ":". */
export function outputFileName(name: string): string {
  return `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`;
}

/**
 * One file name per output, refusing two outputs that would share one
 * ("a/b" and "a_b"; or names differing only in case, which share a file on
 * case-insensitive file systems): one of them would be lost without a word.
 */
export function outputFileNames(names: readonly string[]): Map<string, string> {
  const files = new Map<string, string>();
  const taken = new Map<string, string>();
  for (const name of names) {
    const file = outputFileName(name);
    const other = taken.get(file.toLowerCase());
    if (other !== undefined) {
      throw new PopefError(ErrorCode.InvalidInput, `outputs "${other}" and "${name}" would both be saved as ${file}`, {
        suggestion: 'give one of them another name in name_map.json',
      });
    }
    taken.set(file.toLowerCase(), name);
    files.set(name, file);
  }
  return files;
}

/** The file of each output by client name, worked out once, when first asked (a clash is an error only when outputs are saved or compared). */
export function outputFiles(outputs: ReadonlyMap<string, Tensor>, nameOf: (anchor: string) => string): (name: string) => string {
  let names: Map<string, string> | undefined;
  return (name) => (names ??= outputFileNames([...outputs.values()].map((t) => nameOf(t.name)))).get(name) ?? outputFileName(name);
}

/** Writes every output as DIR/NAME.npy, atomically, replacing files only with `force`. */
export async function saveOutputs(
  outputs: ReadonlyMap<string, Tensor>,
  dir: string,
  nameOf: (anchor: string) => string,
  fileOf: (name: string) => string,
  force?: boolean,
): Promise<void> {
  const files = [...outputs.values()].map((t) => ({ path: join(dir, fileOf(nameOf(t.name))), content: writeNpy(t) }));
  await writeFilesAtomically(files, { force });
}

/**
 * The saved values of output `name`, from `file`: the --expect argument
 * itself (`given` 'file', one FILE.npy) or NAME.npy in the --expect
 * directory (`given` 'directory').
 */
export async function readExpected(file: string, name: string, given: 'file' | 'directory' = 'directory'): Promise<Tensor> {
  const bytes = await readRegularFile(file, { what: `the expected values of output "${name}"`, limit: FILE_LIMITS.input }).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
    const missing = (why: string, suggestion: string): PopefError =>
      new PopefError(ErrorCode.Io, `no expected values for output "${name}": ${why}`, { file, suggestion });
    if (given === 'file') throw missing('the file does not exist', 'give the .npy file popef run --save-outputs wrote, or its directory');
    // A mistyped directory: say so, not only which output's file is missing.
    const dir = dirname(file);
    if (!isDirectorySync(dir))
      throw missing(`${dir} is not a directory`, '--expect takes the directory popef run --save-outputs wrote (NAME.npy per output) or one FILE.npy');
    throw missing(`${basename(file)} is not in ${dir}`, 'save them with popef run --save-outputs');
  });
  return readNpy(bytes, file);
}
