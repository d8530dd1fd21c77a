import { copyFile, link, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, ioError } from '../errors.js';

/**
 * Lays out one model of a Triton repository:
 *
 *   REPO/NAME/config.pbtxt
 *   REPO/NAME/VERSION/executable.popef   (+ every other file of the model set)
 *   REPO/NAME/VERSION/name_map.json
 *
 * All or nothing: everything is staged in a hidden directory inside REPO
 * (same filesystem) and renamed into place; an interrupted or failed run
 * leaves the repository as it was. Existing files are replaced only with
 * `force`, and then only config.pbtxt and the version directory: other
 * versions and files of the model are kept.
 */

/** One file scaffold writes: its path and its contents (or the file it links to). */
export interface ScaffoldFile {
  /** Path relative to the model directory. */
  readonly path: string;
  /** Text to write, or a file to copy (or hard-link). */
  readonly content: { readonly text: string } | { readonly copyFrom: string };
}

/** The files scaffold would write, worked out before anything is written. */
export interface ScaffoldPlan {
  readonly repository: string;
  readonly model: string;
  readonly version: number;
  readonly modelDir: string;
  readonly files: readonly ScaffoldFile[];
  /** Existing paths that would be replaced (only allowed with force). */
  readonly replaces: readonly string[];
}

/** What scaffold writes, and where. */
export interface ScaffoldOptions {
  readonly force?: boolean;
  /** Hard-link PopEF files instead of copying them. */
  readonly link?: boolean;
  /** Ctrl-C: checked before each file and before the new model is moved into place; nothing is left. */
  readonly signal?: AbortSignal;
}

/** Refuses model names Triton cannot use as a directory, or that would leave the repository. */
export function checkModelName(name: string): void {
  const problem =
    name === ''
      ? 'is empty'
      : name.includes('/') || name.includes('\\')
        ? 'contains a path separator'
        : name === '.' || name === '..' || name.includes('..')
          ? 'contains ".."'
          : name.startsWith('.')
            ? 'starts with "." (Triton would treat a hidden directory as a model, and tools hide it)'
            : Array.from({ length: name.length }, (_, i) => name.charCodeAt(i)).some((code) => code < 32)
              ? 'contains control characters'
              : undefined;
  if (problem !== undefined) {
    throw new PopefError(ErrorCode.InvalidInput, `model name ${JSON.stringify(name)} ${problem}`, {
      field: 'model name',
      suggestion: 'use a plain directory name such as mnist or bert-squad',
    });
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Works out what would be written; touches nothing. */
export async function planScaffold(
  repository: string,
  model: string,
  version: number,
  files: { readonly config: string; readonly nameMap: string; readonly popefFiles: readonly string[] },
  options: ScaffoldOptions = {},
): Promise<ScaffoldPlan> {
  checkModelName(model);
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new PopefError(ErrorCode.InvalidInput, `version ${version} is not a positive integer`, {
      suggestion: 'Triton only loads numeric version directories: use --version 1 or higher',
    });
  }
  const modelDir = join(repository, model);
  const out: ScaffoldFile[] = [
    { path: 'config.pbtxt', content: { text: files.config } },
    { path: join(String(version), 'name_map.json'), content: { text: files.nameMap } },
  ];
  const taken = new Set(['name_map.json']);
  files.popefFiles.forEach((file, i) => {
    // The file with the executable is executable.popef, as Graphcore's examples name it.
    const name = i === 0 ? 'executable.popef' : basename(file);
    if (taken.has(name)) {
      throw new PopefError(ErrorCode.InvalidInput, `two files of the model would both be placed as ${version}/${name}`, {
        file,
        suggestion: 'rename one of the PopEF files',
      });
    }
    taken.add(name);
    out.push({ path: join(String(version), name), content: { copyFrom: file } });
  });
  const replaces: string[] = [];
  for (const target of [join(modelDir, 'config.pbtxt'), join(modelDir, String(version))]) {
    if (await exists(target)) replaces.push(target);
  }
  if (replaces.length > 0 && options.force !== true) {
    throw new PopefError(ErrorCode.Exists, `${replaces.join(' and ')} already exist${replaces.length === 1 ? 's' : ''}`, {
      file: modelDir,
      suggestion: 'choose another model name or version, or pass force: true to replace them',
    });
  }
  return { repository, model, version, modelDir, files: out, replaces };
}

/** Carries out a plan. On any error nothing of it is left behind. */
export async function applyScaffold(plan: ScaffoldPlan, options: ScaffoldOptions = {}): Promise<void> {
  await removeStaleSiblings(plan.modelDir);
  const staging = tempSibling(plan.modelDir, 'staging');
  const backups: { from: string; to: string }[] = [];
  const moved: string[] = [];
  try {
    await mkdir(plan.repository, { recursive: true }).catch((error: unknown) => {
      throw ioError(error, plan.repository, 'create the repository directory');
    });
    await mkdir(join(staging, String(plan.version)), { recursive: true }).catch((error: unknown) => {
      throw ioError(error, plan.repository, 'write into the repository');
    });
    const stopIfAsked = (): void => {
      if (options.signal?.aborted === true) throw new PopefError(ErrorCode.Io, 'interrupted; nothing was written', { file: plan.modelDir });
    };
    for (const f of plan.files) {
      stopIfAsked();
      const target = join(staging, f.path);
      try {
        if ('text' in f.content) await writeFile(target, f.content.text, { flag: 'wx' });
        else if (options.link === true) await link(f.content.copyFrom, target);
        else await copyFile(f.content.copyFrom, target);
      } catch (error) {
        const errno = (error as NodeJS.ErrnoException).code;
        if (errno === 'EXDEV') {
          throw new PopefError(ErrorCode.Io, 'cannot hard-link across filesystems', {
            file: 'text' in f.content ? target : f.content.copyFrom,
            suggestion: 'drop --link to copy the file instead',
          });
        }
        throw ioError(error, join(plan.modelDir, f.path), 'write');
      }
    }
    stopIfAsked();
    const modelExists = await exists(plan.modelDir);
    try {
      if (!modelExists) {
        await rename(staging, plan.modelDir);
        return;
      }
      // Replace config.pbtxt and the version directory; keep everything else.
      for (const name of ['config.pbtxt', String(plan.version)]) {
        const current = join(plan.modelDir, name);
        if (await exists(current)) {
          const backup = `${staging}.old-${name}`;
          await rename(current, backup);
          backups.push({ from: current, to: backup });
        }
        await rename(join(staging, name), current);
        moved.push(current);
      }
    } catch (error) {
      throw ioError(error, plan.modelDir, 'move the new files into place');
    }
    await Promise.all(backups.map((b) => rm(b.to, { recursive: true, force: true })));
    backups.length = 0;
  } catch (error) {
    // Roll back: remove what was moved in, restore what was moved out.
    for (const path of moved.reverse()) await rm(path, { recursive: true, force: true }).catch(() => undefined);
    for (const b of backups.reverse()) await rename(b.to, b.from).catch(() => undefined);
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
  }
}
