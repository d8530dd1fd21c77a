import { lstatSync, readdirSync, realpathSync, statSync, type Dirent } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { PopefError, ioError, isNotFound } from '../../errors.js';
import { FILE_LIMITS, readRegularFile, readRegularText } from '../../io/local-file.js';
import type { Message, ModelConfig } from '../model-config.js';
import type { SourcePos } from '../pbtxt-lexer.js';
import { parsePbtxtPositionsOnDemand } from '../pbtxt-parser.js';
import type { DirEntry } from './normalize.js';
import { childPath } from '../../io/child-path.js';

/**
 * A model directory of a Triton repository, read once with Triton's rules:
 * which sub-directories are versions (ModelRepositoryManager's
 * VersionsToLoad, core r24.10), which of them the version policy selects,
 * and what each selected version holds. `popef validate`, `popef run` and
 * `popef serve` all read a model directory through this module, so the three
 * agree on the version served.
 *
 * Directories are listed once each, and their entries' types come from the
 * listing, so a plain file or directory costs no stat; only symbolic links
 * are followed with one. These calls are synchronous: each is a few
 * microseconds on a local file system, where a trip through libuv's thread
 * pool costs far more on a loaded machine (src/io/local-file.ts).
 *
 * Failures to read a file that belongs to one version are kept beside it
 * (`listError`, `nameMapError`) rather than thrown: validate reports the model's other
 * findings first, as Triton's log does, and a reader that needs the version
 * rethrows.
 */

/** Directories in a model directory that are not versions (Triton skips them silently). */
const NOT_VERSIONS = new Set(['warmup', 'initial_state', 'configs']);

/** How Triton reads a sub-directory's name as a version. */
export type VersionVerdict =
  /** A plain decimal number. */
  | 'version'
  /** Digits with a leading zero: Triton ignores the directory. */
  | 'leading-zeros'
  /** No numeric prefix: Triton ignores the directory. */
  | 'not-a-number'
  /** A numeric prefix and more (Triton's std::stoll reads the prefix): loaded as that version. */
  | 'numeric-prefix';

export interface VersionCandidate {
  /** The directory's name. */
  readonly dir: string;
  readonly verdict: VersionVerdict;
  /** The version Triton reads, when it reads one ('version' and 'numeric-prefix'). */
  readonly version?: number;
}

/** The file name.popef sort: executable.popef first, then by name (Graphcore's examples name it so). */
export function sortPopefFiles(names: readonly string[]): string[] {
  return names
    .filter((f) => f.endsWith('.popef'))
    .sort((a, b) => (a === 'executable.popef' ? -1 : b === 'executable.popef' ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/** One version directory the policy selects, as read: its files, PopEF files in order and name map. */
export interface VersionDirectory {
  readonly dir: string;
  readonly version: number;
  /** Names of the entries that are not directories. */
  readonly files: readonly string[];
  /** The .popef files among them, in the order they are opened as one model set. */
  readonly popefFiles: readonly string[];
  /** Those of `files` the listing gave as regular files, not links: they are read without an fstat when small (local-file.ts). */
  readonly regular?: ReadonlySet<string>;
  /** name_map.json's text, when the version holds one and it could be read. */
  readonly nameMapText?: string;
  /** What stopped the directory being listed (then `files` is empty). */
  readonly listError?: PopefError;
  /** What stopped name_map.json being read. */
  readonly nameMapError?: PopefError;
  /** name_map.json is a symbolic link that leaves the repository: it was not read. */
  readonly nameMapLinksOutside?: boolean;
}

/** config.pbtxt as read: absent, parsed, or not parsable (the parser's error, with its position). */
export type ConfigRead =
  | { readonly kind: 'missing' }
  /** A symbolic link that leaves the repository: not read, so nothing of its target is quoted. */
  | { readonly kind: 'link-outside' }
  | { readonly kind: 'parsed'; readonly bytes: Uint8Array; readonly config: ModelConfig; readonly positions: ReadonlyMap<string, SourcePos> }
  | { readonly kind: 'unparsable'; readonly bytes: Uint8Array; readonly error: PopefError };

/** A model directory read once with Triton's rules, shared by validate, run and serve. */
export interface ModelDirectoryRead {
  /** The directory's name: the model's name in the repository. */
  readonly name: string;
  readonly path: string;
  readonly config: ConfigRead;
  /**
   * Contents of the first (byte-order) sub-directory, whatever its name:
   * what Triton's autofill inspects. Undefined when there is none.
   */
  readonly firstSubdirectory?: readonly DirEntry[];
  /** Every sub-directory Triton considers as a version, with its verdict, in listing order. */
  readonly candidates: readonly VersionCandidate[];
  /** The versions the policy selects, highest first, each read. */
  readonly selected: readonly VersionDirectory[];
  /** Sub-directory entries that are symbolic link loops (ELOOP): Triton cannot open them. */
  readonly linkLoops: readonly string[];
}

/** Whether `entry` is a symbolic link that loops (ELOOP): not a directory, and not to be skipped in silence. */
export function isLinkLoop(path: string, entry: Dirent): boolean {
  if (!entry.isSymbolicLink()) return false;
  try {
    statSync(path);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ELOOP';
  }
}

/**
 * Whether `path` is a symbolic link whose target lies outside `root` (the
 * repository): such a file (/etc/shadow, an env file) is not read, so that
 * nothing of it can reach a report. `entry`, when the caller listed the
 * directory, says whether it is a link without another lstat.
 */
export function linksOutside(path: string, root: string | undefined, entry?: Dirent): boolean {
  if (root === undefined) return false;
  if (entry !== undefined ? !entry.isSymbolicLink() : lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() !== true) return false;
  const realOrUndefined = (p: string): string | undefined => {
    try {
      return realpathSync(p);
    } catch {
      return undefined;
    }
  };
  const target = realOrUndefined(path);
  if (target === undefined) return false;
  const inside = relative(realOrUndefined(root) ?? root, target);
  return inside === '' || inside.startsWith('..') || isAbsolute(inside);
}

/** A directory's entries; a failure is a PopefError naming the directory. */
export function listDir(path: string): Dirent[] {
  try {
    return readdirSync(path, { withFileTypes: true });
  } catch (error) {
    throw ioError(error, path, 'list the directory');
  }
}

/** Whether an entry is a directory, following a symbolic link as Triton does. */
export function isDirectory(path: string, entry: Dirent): boolean {
  if (entry.isDirectory()) return true;
  if (!entry.isSymbolicLink()) return false;
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/** How Triton reads a version directory's name (std::stoll: a numeric prefix counts). */
export function versionVerdict(name: string): VersionCandidate {
  if (/^(0|[1-9]\d*)$/.test(name)) return { dir: name, verdict: 'version', version: Number(name) };
  if (name.length > 1 && name.startsWith('0') && /^\d+$/.test(name)) return { dir: name, verdict: 'leading-zeros' };
  const m = /^\s*([+-]?\d+)/.exec(name);
  return m === null ? { dir: name, verdict: 'not-a-number' } : { dir: name, verdict: 'numeric-prefix', version: Number(m[1]) };
}

/**
 * The candidates a version policy selects, highest version first, as
 * VersionsToLoad selects them: latest N (N = 1 without a policy), all, or
 * the specific versions that exist.
 */
export function selectVersions(
  candidates: readonly VersionCandidate[],
  policy: Message<'inference.ModelVersionPolicy'> | undefined,
): VersionCandidate[] {
  const byVersion = candidates.filter((c) => c.version !== undefined).sort((a, b) => (b.version ?? 0) - (a.version ?? 0));
  if (policy?.all !== undefined) return byVersion;
  if (policy?.specific !== undefined) {
    const wanted = new Set((policy.specific.versions ?? []).map(Number));
    return byVersion.filter((v) => wanted.has(v.version ?? NaN));
  }
  const count = policy?.latest === undefined ? 1 : (policy.latest.num_versions ?? 0);
  return byVersion.slice(0, count);
}

/** Reads one version directory: its files, its PopEF files in order, its name map. */
export async function readVersionDirectory(
  modelPath: string,
  candidate: VersionCandidate & { readonly version: number },
  list: (path: string) => Dirent[] = listDir,
  root?: string,
): Promise<VersionDirectory> {
  const path = childPath(modelPath, candidate.dir);
  let entries: Dirent[];
  try {
    entries = list(path).filter((e) => !e.isDirectory());
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    return { dir: candidate.dir, version: candidate.version, files: [], popefFiles: [], listError: error };
  }
  const files = entries.map((e) => e.name);
  const regular = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
  // One object, its optional fields set on it afterwards: before V8 optimises the code, a spread followed by a field
  // ({ ...base, nameMapText }) costs microseconds, and this runs once per model (issue 26).
  const read: Mutable<VersionDirectory> = { dir: candidate.dir, version: candidate.version, files, popefFiles: sortPopefFiles(files), regular };
  const nameMap = entries.find((e) => e.name === 'name_map.json');
  if (nameMap === undefined) return read;
  const nameMapPath = childPath(path, 'name_map.json');
  if (linksOutside(nameMapPath, root, nameMap)) {
    read.nameMapLinksOutside = true;
    return read;
  }
  try {
    read.nameMapText = await readRegularText(nameMapPath, {
      what: 'name_map.json',
      limit: FILE_LIMITS.json,
      listedRegular: nameMap.isFile(),
    });
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    read.nameMapError = error;
  }
  return read;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** config.pbtxt, when `entry` (from the model directory's listing) says there is one. */
async function readConfig(path: string, file: string, root: string | undefined, entry: Dirent | undefined): Promise<ConfigRead> {
  if (entry === undefined) return { kind: 'missing' };
  if (linksOutside(path, root, entry)) return { kind: 'link-outside' };
  let bytes: Uint8Array;
  try {
    // The bytes go to the parser as they are: a 50 MB config is not also decoded into a string.
    bytes = await readRegularFile(path, { what: 'config.pbtxt', limit: FILE_LIMITS.config, listedRegular: entry.isFile() });
  } catch (error) {
    if (isNotFound(error)) return { kind: 'missing' };
    throw error;
  }
  try {
    // The bytes are this read's own, and kept unchanged: the positions can wait until a finding needs one.
    const parsed = parsePbtxtPositionsOnDemand(bytes, { file });
    return { kind: 'parsed', bytes, config: parsed.message, positions: parsed.positions };
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    return { kind: 'unparsable', bytes, error };
  }
}

/**
 * Reads a model directory. Throws (a PopefError) only when the directory
 * itself or its config.pbtxt cannot be read; `configFile` is how parse
 * errors name the config (relative to the repository for validate).
 */
export async function readModelDirectory(
  given: string,
  name: string,
  configFile = join(name, 'config.pbtxt'),
  root?: string,
): Promise<ModelDirectoryRead> {
  // The paths below it are built on its normalized form (childPath); the read keeps the path as given.
  const path = normalize(given);
  // Listings read once: autofill and the version reading both list the first sub-directory.
  const listings = new Map<string, Dirent[]>();
  const list = (p: string): Dirent[] => {
    let listing = listings.get(p);
    if (listing === undefined) {
      listing = listDir(p);
      listings.set(p, listing);
    }
    return listing;
  };
  let entries: Dirent[];
  try {
    // As given: the kernel resolves it, and "missing/.." or "link/.." is not what normalize makes of it.
    entries = list(given);
  } catch (error) {
    // A model directory that cannot be listed: its config's failure to open is what Triton reports first.
    await readRegularFile(childPath(path, 'config.pbtxt'), { what: 'config.pbtxt', limit: FILE_LIMITS.config }).catch((configError: unknown) => {
      if (!isNotFound(configError)) throw configError;
    });
    throw error;
  }
  const config = await readConfig(
    childPath(path, 'config.pbtxt'),
    configFile,
    root,
    entries.find((e) => e.name === 'config.pbtxt'),
  );
  const subdirs: string[] = [];
  const linkLoops: string[] = [];
  // Indexed, as below: this runs for every model, before V8 optimises it, when for-of makes an iterator and a result
  // object per step (issue 26).
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k] as Dirent;
    // The listing says what a plain entry is; only a symbolic link needs its path joined and followed.
    if (e.isDirectory()) subdirs.push(e.name);
    else if (e.isSymbolicLink()) {
      const linked = childPath(path, e.name);
      if (isLinkLoop(linked, e)) linkLoops.push(e.name);
      else if (isDirectory(linked, e)) subdirs.push(e.name);
    }
  }
  const first = [...subdirs].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))[0];
  let firstSubdirectory: DirEntry[] | undefined;
  if (first !== undefined) {
    let inside: Dirent[];
    try {
      inside = list(childPath(path, first));
    } catch (error) {
      if (!(error instanceof PopefError)) throw error;
      inside = [];
    }
    firstSubdirectory = inside.map((e) => ({
      name: e.name,
      isDirectory: e.isDirectory() || (e.isSymbolicLink() && isDirectory(join(path, first, e.name), e)),
    }));
  }
  const candidates = subdirs.filter((d) => !NOT_VERSIONS.has(d)).map(versionVerdict);
  const policy = config.kind === 'parsed' ? config.config.version_policy : undefined;
  const selected: VersionDirectory[] = [];
  const chosen = selectVersions(candidates, policy);
  for (let k = 0; k < chosen.length; k++) {
    const c = chosen[k] as VersionCandidate;
    if (c.version !== undefined) selected.push(await readVersionDirectory(path, { dir: c.dir, verdict: c.verdict, version: c.version }, list, root));
  }
  const read: Mutable<ModelDirectoryRead> = { name, path: given, config, candidates, selected, linkLoops };
  if (firstSubdirectory !== undefined) read.firstSubdirectory = firstSubdirectory;
  return read;
}
