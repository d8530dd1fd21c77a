import { readdir, stat } from 'node:fs/promises';
import { FILE_LIMITS, readRegularText } from '../io/local-file.js';
import { basename, join, resolve } from 'node:path';
import { ErrorCode, PopefError, ioError, isNotFound } from '../errors.js';
import { parseNameMap } from '../triton/name-map.js';

/**
 * What `popef run` was pointed at: PopEF files, or a model directory of a
 * Triton repository, where config.pbtxt's neighbour name_map.json gives the
 * client-facing names the server would use.
 */
export interface ModelTarget {
  readonly files: readonly string[];
  /** Anchor name -> client name (empty for bare PopEF files). */
  readonly clientNames: ReadonlyMap<string, string>;
  /** For messages: "model directory models/mnist, version 1" or the file list. */
  readonly description: string;
  /** For a model directory: its name (the served model's name) and the version run. */
  readonly modelName?: string;
  readonly version?: number;
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

export async function resolveTarget(args: readonly string[], cwd: string, version?: number): Promise<ModelTarget> {
  const paths = args.map((a) => resolve(cwd, a));
  const first = paths[0];
  if (paths.length === 1 && first !== undefined && (await isDirectory(first))) {
    const entries = await readdir(first).catch((error: unknown) => {
      throw ioError(error, first, 'list the model directory');
    });
    const versions = entries.filter((e) => /^(0|[1-9]\d*)$/.test(e)).map(Number).sort((a, b) => b - a);
    const chosen = version ?? versions[0];
    if (chosen === undefined || !versions.includes(chosen)) {
      throw new PopefError(ErrorCode.InvalidInput, version === undefined ? 'the model directory has no numeric version directory' : `the model directory has no version ${version}`, {
        file: first,
        suggestion: 'give a model directory of a Triton repository (MODEL/config.pbtxt, MODEL/1/executable.popef) or PopEF files',
      });
    }
    const versionDir = join(first, String(chosen));
    const files = (await readdir(versionDir))
      .filter((f) => f.endsWith('.popef'))
      .sort((a, b) => (a === 'executable.popef' ? -1 : b === 'executable.popef' ? 1 : a < b ? -1 : 1))
      .map((f) => join(versionDir, f));
    if (files.length === 0) {
      throw new PopefError(ErrorCode.InvalidInput, `version directory ${chosen} holds no .popef file`, { file: versionDir });
    }
    const clientNames = new Map<string, string>();
    const mapPath = join(versionDir, 'name_map.json');
    const text = await readRegularText(mapPath, { what: 'name_map.json', limit: FILE_LIMITS.json }).catch((error: unknown) => {
      // No map: the anchors keep their own names. Any other failure is the user's to fix.
      if (isNotFound(error)) return undefined;
      throw error;
    });
    if (text !== undefined) {
      const parsed = parseNameMap(text, mapPath);
      if (parsed.schemaErrors.length > 0) {
        throw new PopefError(ErrorCode.InvalidInput, `name_map.json is not usable: ${parsed.schemaErrors.join('; ')}`, { file: mapPath, suggestion: 'check it with popef validate' });
      }
      for (const e of parsed.entries) clientNames.set(e.anchor, e.name);
    }
    return { files, clientNames, description: `model directory ${args[0] ?? ''}, version ${chosen}`, modelName: basename(first), version: chosen };
  }
  return { files: paths, clientNames: new Map(), description: args.join(' + ') };
}
