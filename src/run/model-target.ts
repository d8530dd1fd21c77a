import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, join, normalize, resolve } from 'node:path';
import { ErrorCode, PopefError } from '../errors.js';
import { parseNameMap } from '../triton/name-map.js';
import { readModelDirectory, readVersionDirectory, type VersionDirectory } from '../triton/repository/model-directory.js';

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

const MODEL_DIRECTORY_HINT = 'give a model directory of a Triton repository (MODEL/config.pbtxt, MODEL/1/executable.popef) or PopEF files';

/**
 * A model directory's version, read as Triton reads it (model-directory.ts,
 * the reader validate and serve use): without `version`, the highest the
 * config's version policy selects; with it, that version directory whether
 * the policy selects it or not (the user asked for it by number).
 */
export async function modelDirectoryVersion(path: string, version?: number): Promise<VersionDirectory> {
  const directory = await readModelDirectory(path, basename(path));
  if (directory.config.kind === 'unparsable') {
    // Which version Triton would serve depends on the policy the config sets.
    throw new PopefError(ErrorCode.InvalidInput, `config.pbtxt does not parse: ${directory.config.error.message}`, {
      file: join(path, 'config.pbtxt'),
      suggestion: 'check it with popef validate',
    });
  }
  let chosen: VersionDirectory | undefined;
  if (version === undefined) {
    chosen = directory.selected[0];
  } else {
    chosen = directory.selected.find((v) => v.version === version);
    const candidate = directory.candidates.find((c) => c.version === version);
    if (chosen === undefined && candidate !== undefined) chosen = await readVersionDirectory(normalize(path), { ...candidate, version });
  }
  if (chosen === undefined) {
    const none = directory.candidates.every((c) => c.version === undefined);
    const message =
      version !== undefined
        ? `the model directory has no version ${version}`
        : none
          ? 'the model directory has no numeric version directory'
          : 'the version policy of config.pbtxt selects no version directory';
    // A repository given for one of its models (popef run models): it has no config of its own, its directories do.
    const model =
      none && directory.config.kind === 'missing' ? directory.candidates.find((c) => existsSync(join(path, c.dir, 'config.pbtxt'))) : undefined;
    if (model !== undefined) {
      throw new PopefError(ErrorCode.InvalidInput, `it is a model repository, not a model directory: ${model.dir}/config.pbtxt is a model's config`, {
        file: path,
        suggestion: `give one of its models' directories, such as ${join(path, model.dir)}`,
      });
    }
    throw new PopefError(ErrorCode.InvalidInput, message, { file: path, suggestion: MODEL_DIRECTORY_HINT });
  }
  if (chosen.listError !== undefined) throw chosen.listError;
  if (chosen.nameMapError !== undefined) throw chosen.nameMapError;
  return chosen;
}

export async function resolveTarget(args: readonly string[], cwd: string, version?: number): Promise<ModelTarget> {
  const paths = args.map((a) => resolve(cwd, a));
  const first = paths[0];
  if (paths.length === 1 && first !== undefined && (await isDirectory(first))) {
    const chosen = await modelDirectoryVersion(first, version);
    const versionDir = join(first, chosen.dir);
    const files = chosen.popefFiles.map((f) => join(versionDir, f));
    if (files.length === 0) {
      throw new PopefError(ErrorCode.InvalidInput, `version directory ${chosen.version} holds no .popef file`, { file: versionDir });
    }
    const clientNames = new Map<string, string>();
    const mapPath = join(versionDir, 'name_map.json');
    // No map: the anchors keep their own names.
    if (chosen.nameMapText !== undefined) {
      const parsed = parseNameMap(chosen.nameMapText, mapPath);
      if (parsed.schemaErrors.length > 0) {
        throw new PopefError(ErrorCode.InvalidInput, `name_map.json is not usable: ${parsed.schemaErrors.join('; ')}`, {
          file: mapPath,
          suggestion: 'check it with popef validate',
        });
      }
      for (const e of parsed.entries) clientNames.set(e.anchor, e.name);
    }
    return {
      files,
      clientNames,
      description: `model directory ${args[0] ?? ''}, version ${chosen.version}`,
      modelName: basename(first),
      version: chosen.version,
    };
  }
  return { files: paths, clientNames: new Map(), description: args.join(' + ') };
}
