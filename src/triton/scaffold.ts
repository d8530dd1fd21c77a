import { copyFile, link, lstat, readdir, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative } from 'node:path';
import { makeDirectories, type MadeDirectories } from '../io/make-directories.js';
import { deadStagings, removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, ioError, isNotFound, isPopefError } from '../errors.js';
import { FILE_LIMITS, readRegularText } from '../io/local-file.js';
import { configDifferences, type ConfigDifference } from './config-match.js';
import type { ModelConfig } from './model-config.js';
import { parsePbtxt } from './pbtxt-parser.js';
import { isDirectory, selectVersions, versionVerdict, type VersionCandidate } from './repository/model-directory.js';

/**
 * Lays out one model of a Triton repository:
 *
 *   REPO/NAME/config.pbtxt
 *   REPO/NAME/VERSION/executable.popef   (+ every other file of the model set)
 *   REPO/NAME/VERSION/name_map.json
 *
 * All or nothing: everything is staged in a hidden directory inside REPO
 * (same filesystem) and renamed into place; an interrupted or failed run
 * leaves the repository as it was.
 *
 * A version added beside others keeps config.pbtxt, byte for byte, when it
 * already describes the new PopEF (compared as parsed messages, see
 * config-match.ts): a serving engineer adding MODEL/2/ beside MODEL/1/
 * needs no `force`. An existing version directory, or a config.pbtxt that
 * differs (or does not parse), is replaced only with `force`, and then only
 * that version directory and (when it differs) config.pbtxt: other versions
 * and files of the model are kept.
 *
 * A run killed while swapping entries (SIGKILL cannot be caught) is
 * finished by the next one: once every file is staged, a marker file
 * (READY) says the staging directory is complete, so whatever of it was not
 * yet moved in can be; without the marker the swap never began, and what was
 * moved aside goes back. Either way the model ends whole, never with the old
 * version directory and no config.pbtxt.
 */

/** Written into the staging directory once every file is in it; see above. */
const READY = '.popef-ready';

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
  /** config.pbtxt exists and already describes the new PopEF: it is kept as it is and is not among `files`. */
  readonly keepsConfig: boolean;
  /** What the user should know that does not stop the scaffold, e.g. a version policy that will not serve the new version. */
  readonly notes: readonly ScaffoldNote[];
}

/** Something a scaffold's user should know; not an error. */
export interface ScaffoldNote {
  readonly message: string;
  readonly hint: string;
}

/** How many differences an error lists before it says how many more there are. */
const DIFFERENCES_SHOWN = 5;

/**
 * config.pbtxt exists and does not describe the new PopEF (or cannot be
 * read as a config): adding the version would serve it with the wrong
 * config, and replacing config.pbtxt needs force. `differences` says where,
 * empty when the file does not parse.
 */
export class ConfigMismatchError extends PopefError {
  readonly differences: readonly ConfigDifference[];

  constructor(modelDir: string, configPath: string, differences: readonly ConfigDifference[], unreadable?: PopefError) {
    const shown = differences.slice(0, DIFFERENCES_SHOWN).map((d) => `${d.field}: existing ${d.existing}, needed ${d.needed}`);
    const more = differences.length - shown.length;
    const what =
      unreadable !== undefined
        ? `cannot be read as a config (${unreadable.describe()}), so whether it serves the new PopEF cannot be told`
        : `does not match what the new PopEF needs: ${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
    super(ErrorCode.Exists, `${configPath} already exists and ${what}`, {
      file: modelDir,
      suggestion: 'edit config.pbtxt so that it matches, or pass force: true to replace it (other versions are kept and served with the new config)',
      suggestedOption: 'force',
    });
    this.name = 'ConfigMismatchError';
    this.differences = differences;
  }
}

/** config.pbtxt on disk against the one the new PopEF needs. */
interface ConfigFit {
  /** The config on disk, when it parses. */
  readonly config?: ModelConfig;
  readonly differences: readonly ConfigDifference[];
  /** Why the file could not be read or parsed. */
  readonly unreadable?: PopefError;
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
  files: {
    readonly config: string;
    readonly nameMap: string;
    readonly popefFiles: readonly string[];
    /** The PopEF description to place: one the model was scaffolded from, or one written for an SDK-written file. */
    readonly description?: ScaffoldFile['content'];
  },
  options: ScaffoldOptions = {},
): Promise<ScaffoldPlan> {
  checkModelName(model);
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new PopefError(ErrorCode.InvalidInput, `version ${version} is not a positive integer`, {
      suggestion: 'Triton only loads numeric version directories: use --version 1 or higher',
    });
  }
  const modelDir = join(repository, model);
  await refuseLinkOut(repository, modelDir);
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
  // A description goes where validate looks for it: beside the export, or where the export belongs.
  if (files.description !== undefined) out.push({ path: join(String(version), 'executable.popef.json'), content: files.description });
  const configPath = join(modelDir, 'config.pbtxt');
  const versionDir = join(modelDir, String(version));
  const needed = parsePbtxt(files.config).message;
  const fit = await fitOfExistingConfig(configPath, needed, model);
  const keepsConfig = fit !== undefined && fit.unreadable === undefined && fit.differences.length === 0;
  const versionExists = await exists(versionDir);
  const replaces = [...(fit !== undefined && !keepsConfig ? [configPath] : []), ...(versionExists ? [versionDir] : [])];
  if (options.force !== true) refuseReplacing(modelDir, replaces, versionExists, keepsConfig ? undefined : fit);
  const onDisk = await versionsOnDisk(modelDir);
  const notes = versionPolicyNotes(keepsConfig ? (fit.config ?? needed) : needed, version, onDisk);
  if (fit !== undefined && !keepsConfig) notes.push(...otherVersionsNote(onDisk, version));
  return {
    repository,
    model,
    version,
    modelDir,
    files: keepsConfig ? out.filter((f) => f.path !== 'config.pbtxt') : out,
    replaces,
    keepsConfig,
    notes,
  };
}

/**
 * Without force: an existing version directory is refused as before (naming
 * config.pbtxt too when it would also be replaced); otherwise a config that
 * does not fit (`misfit`) is refused with what differs.
 */
function refuseReplacing(modelDir: string, replaces: readonly string[], versionExists: boolean, misfit: ConfigFit | undefined): void {
  if (versionExists) {
    throw new PopefError(ErrorCode.Exists, `${replaces.join(' and ')} already exist${replaces.length === 1 ? 's' : ''}`, {
      file: modelDir,
      suggestion: 'choose another model name or version, or pass force: true to replace them',
      suggestedOption: 'force',
    });
  }
  if (misfit !== undefined) throw new ConfigMismatchError(modelDir, join(modelDir, 'config.pbtxt'), misfit.differences, misfit.unreadable);
}

/** The existing config.pbtxt against the one needed; undefined when there is none. */
async function fitOfExistingConfig(configPath: string, needed: ModelConfig, model: string): Promise<ConfigFit | undefined> {
  let text: string;
  try {
    // As every other reader of config.pbtxt reads it: a regular file, within the config limit.
    text = await readRegularText(configPath, { what: 'config.pbtxt', limit: FILE_LIMITS.config });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    if (!isPopefError(error)) throw error;
    // Unreadable is not absent: without force it is kept; with force it is replaced, as before.
    return { differences: [], unreadable: error };
  }
  try {
    const config = parsePbtxt(text, { file: configPath }).message;
    return { config, differences: configDifferences(config, needed, model) };
  } catch (error) {
    if (!isPopefError(error)) throw error;
    return { differences: [], unreadable: error };
  }
}

/** The version directories of a model as Triton reads their names (model-directory.ts), listed once for both notes. */
async function versionsOnDisk(modelDir: string): Promise<VersionCandidate[]> {
  const entries = await readdir(modelDir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => isDirectory(join(modelDir, e.name), e)).map((e) => versionVerdict(e.name));
}

/** With force, a replaced config.pbtxt also serves the versions beside the new one: they were made for the old one. */
function otherVersionsNote(onDisk: readonly VersionCandidate[], version: number): ScaffoldNote[] {
  const others = [...new Set(onDisk.flatMap((c) => (c.version === undefined || c.version === version ? [] : [c.version])))].sort((a, b) => a - b);
  if (others.length === 0) return [];
  const list = `version${others.length === 1 ? '' : 's'} ${others.join(', ')}`;
  return [
    {
      // Present tense: --dry-run prints the notes of what it would do.
      message: `it is replaced by the one version ${version} needs, and ${list} beside it ${others.length === 1 ? 'is' : 'are'} served with it too`,
      hint: `check that ${list} still fit${others.length === 1 ? 's' : ''} it with popef validate`,
    },
  ];
}

/**
 * A note when the config the model will have does not serve the new version,
 * by the selection validate and serve make (selectVersions): a specific
 * policy that does not name it, or a latest policy (Triton's default is
 * latest 1) under which higher versions are served instead. Not an error: a
 * version may be staged before the policy is changed.
 */
function versionPolicyNotes(config: ModelConfig, version: number, onDisk: readonly VersionCandidate[]): ScaffoldNote[] {
  const policy = config.version_policy;
  const candidates = [...onDisk.filter((c) => c.version !== version), { dir: String(version), verdict: 'version' as const, version }];
  const selected = selectVersions(candidates, policy);
  if (selected.some((c) => c.version === version)) return [];
  if (policy?.specific !== undefined) {
    const named = (policy.specific.versions ?? []).map(Number);
    const list = named.length === 0 ? 'no version' : `only version${named.length === 1 ? '' : 's'} ${named.join(', ')}`;
    return [
      {
        message: `its version_policy serves ${list} (specific), so Triton will not load version ${version}`,
        hint: `add ${version} to version_policy { specific { versions: [ ... ] } } in config.pbtxt when version ${version} is to be served`,
      },
    ];
  }
  // latest { num_versions } as written, or Triton's default when no policy is chosen.
  const latest = policy?.latest === undefined ? 1 : (policy.latest.num_versions ?? 0);
  if (latest < 1) return []; // validate reports a policy that serves nothing
  const served = [...new Set(selected.map((c) => c.version))];
  const here = `here version${served.length === 1 ? '' : 's'} ${served.join(', ')}`;
  const which =
    policy?.latest === undefined
      ? `it has no version_policy, so Triton serves only the latest version, ${here}, and will not load version ${version}`
      : `its version_policy serves the latest ${latest} version${latest === 1 ? '' : 's'}, ${here}, so Triton will not load version ${version}`;
  return [
    {
      message: which,
      hint: 'give a version above the others, or set version_policy { all { } } or specific versions in config.pbtxt',
    },
  ];
}

/**
 * REPO/NAME as a symbolic link to a directory outside the repository would
 * have config.pbtxt and the version written somewhere the user did not name
 * (and Triton, which follows it, would serve files from there).
 */
async function refuseLinkOut(repository: string, modelDir: string): Promise<void> {
  const info = await lstat(modelDir).catch(() => undefined);
  if (info === undefined || !info.isSymbolicLink()) return;
  const [target, root] = await Promise.all([realpath(modelDir).catch(() => undefined), realpath(repository).catch(() => repository)]);
  const inside = target === undefined ? '..' : relative(root, target);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new PopefError(
      ErrorCode.InvalidInput,
      `the model directory is a symbolic link that leaves the repository${target === undefined ? ' (or is broken)' : ` (to ${target})`}; scaffold writes only inside the repository`,
      {
        file: modelDir,
        suggestion: 'scaffold into the repository the link points to (-r), or replace the link with a directory',
      },
    );
  }
}

/**
 * Finishes (or undoes, when it never began swapping) a scaffold of
 * `modelDir` whose process was killed; see the comment at the top. Returns
 * what was done, one line each, for the user to be told.
 */
export async function finishInterruptedScaffold(modelDir: string): Promise<string[]> {
  const done: string[] = [];
  for (const { staging, backups } of await deadStagings(modelDir)) {
    try {
      if (!(await exists(join(staging, READY)))) {
        for (const [entry, backup] of backups) {
          if (await exists(join(modelDir, entry))) await rm(backup, { recursive: true, force: true });
          else await rename(backup, join(modelDir, entry));
        }
        await rm(staging, { recursive: true, force: true });
        if (backups.size > 0) done.push(`put back ${[...backups.keys()].join(' and ')}, which an interrupted scaffold had moved aside`);
        continue;
      }
      if (!(await exists(modelDir))) {
        await rm(join(staging, READY));
        await rename(staging, modelDir);
        done.push('finished an interrupted scaffold (the model directory)');
        continue;
      }
      const aside = new Map(backups);
      const entries = (await readdir(staging)).filter((entry) => entry !== READY);
      for (const entry of entries) {
        const target = join(modelDir, entry);
        if (!aside.has(entry) && (await exists(target))) {
          aside.set(entry, `${staging}.old-${entry}`);
          await rename(target, `${staging}.old-${entry}`);
        }
        await rename(join(staging, entry), target);
      }
      await Promise.all([...aside.values()].map((backup) => rm(backup, { recursive: true, force: true })));
      await rm(staging, { recursive: true, force: true });
      if (entries.length > 0 || aside.size > 0)
        done.push(
          `finished an interrupted scaffold (${entries.length > 0 ? `moved in ${entries.join(' and ')}` : 'removed what it had moved aside'})`,
        );
    } catch (error) {
      throw ioError(error, modelDir, 'finish the interrupted scaffold left beside it');
    }
  }
  return done;
}

/** Carries out a plan. On any error nothing of it is left behind. */
export async function applyScaffold(plan: ScaffoldPlan, options: ScaffoldOptions = {}): Promise<void> {
  await finishInterruptedScaffold(plan.modelDir);
  await removeStaleSiblings(plan.modelDir);
  const staging = tempSibling(plan.modelDir, 'staging');
  const backups: { from: string; to: string }[] = [];
  const moved: string[] = [];
  let repository: MadeDirectories | undefined;
  try {
    repository = await makeDirectories(plan.repository).catch((error: unknown) => {
      throw ioError(error, plan.repository, 'create the repository directory');
    });
    await makeDirectories(join(staging, String(plan.version))).catch((error: unknown) => {
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
    // The plan kept a config that was there: the model must not end without one.
    if (plan.keepsConfig && !(await exists(join(plan.modelDir, 'config.pbtxt')))) {
      throw new PopefError(ErrorCode.Io, 'config.pbtxt was removed while the new version was written; nothing was written', {
        file: plan.modelDir,
        suggestion: 'run the scaffold again',
      });
    }
    const modelExists = await exists(plan.modelDir);
    try {
      if (!modelExists) {
        await rename(staging, plan.modelDir);
        return;
      }
      await writeFile(join(staging, READY), '');
      // Replace the version directory and config.pbtxt unless it is kept; keep everything else.
      for (const name of plan.keepsConfig ? [String(plan.version)] : ['config.pbtxt', String(plan.version)]) {
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
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    await repository?.undo();
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
  }
}
