import { join } from 'node:path';
import { PopefError } from '../../errors.js';
import { BLOB_MAGIC } from '../../format/constants.js';
import { layoutOf } from '../../format/header.js';
import { ModelSet } from '../../format/model-set.js';
import {
  descriptionPathOf,
  describedModel,
  isDescriptionName,
  parseDescription,
  sha256Of,
  type PopefDescription,
} from '../../inspect/description.js';
import { FileSource } from '../../io/file-source.js';
import { FILE_LIMITS, readRegularText } from '../../io/local-file.js';
import type { ModelConfig } from '../model-config.js';
import type { RawFinding, RuleId, RuleInput } from './findings.js';
import type { NotCrossChecked } from './layout-rules.js';
import type { VersionDirectory } from './model-directory.js';
import { checkAgainstPopef } from './popef-rules.js';
import { childPath } from '../../io/child-path.js';

/**
 * Where the config of one version is cross-checked from, in this order:
 * its PopEF files when they are in the open layout; for files that are not
 * (SDK-written exports), the caller's foreign reader (the SDK through the
 * bridge, when the CLI has it), else a description committed beside the
 * file (FILE.json, written by `popef describe`), refused when it no longer
 * matches the file's size (and, with `verify`, its SHA-256); for a version
 * with no PopEF file, a description alone, noted as such. When none of
 * these is there the cross-check is not done, and the caller says so.
 */

/** What a PopEF that cannot be read, or a stale description, leaves unusable: nothing is compared with the anchors. */
const POPEF: readonly RuleInput[] = ['popef'];

/**
 * Reads one version's PopEF files that are not in the open layout (the
 * CLI passes the SDK's reader): their models, as a description holds them;
 * undefined when it cannot here.
 */
export type ReadForeignPopef = (paths: readonly string[]) => Promise<Pick<PopefDescription, 'models'> | undefined>;

export interface VersionCheck {
  readonly model: string;
  /** The version directory relative to the repository, for messages (m/1). */
  readonly versionPath: string;
  readonly versionDir: string;
  readonly version: Pick<VersionDirectory, 'files' | 'popefFiles' | 'regular'>;
  /** The config, when it and the name map are usable; else the anchors are not compared (`unusable` says why). */
  readonly config?: ModelConfig;
  readonly unusable: string;
  readonly anchorOf: ReadonlyMap<string, string>;
  readonly wanted: (rule: RuleId) => boolean;
  readonly verify: boolean;
  readonly readForeignPopef?: ReadForeignPopef;
}

export interface VersionOutcome {
  readonly findings: RawFinding[];
  /** Why the cross-check was not done, when that is to be noted (popef/not-cross-checked). */
  readonly notDone?: NotCrossChecked;
  /** Why the rules that read the PopEF did not run, for JUnit. */
  readonly skipped?: string;
}

/** A PopEF file of a version: its path, and whether the version's listing called it a regular file (local-file.ts, LISTED_FIRST_READ). */
interface PopefToOpen {
  readonly path: string;
  readonly listedRegular: boolean;
}

// The loops over a version's files are indexed: they run for every model, before V8 optimises them, when for-of makes
// an iterator and a result object per step (issue 26).

/**
 * Each PopEF file opened once, for both the layout test and the reading:
 * its source, or its path when it could not be opened (the reader then
 * opens it again and reports why it cannot).
 */
async function openAll(files: readonly PopefToOpen[]): Promise<(FileSource | string)[]> {
  const opened: (FileSource | string)[] = [];
  for (let k = 0; k < files.length; k++) {
    const { path, listedRegular } = files[k] as PopefToOpen;
    try {
      opened.push(await FileSource.open(path, path, { listedRegular }));
    } catch (error) {
      if (!(error instanceof PopefError)) {
        await closeAll(opened);
        throw error;
      }
      opened.push(path);
    }
  }
  return opened;
}

async function closeAll(opened: readonly (FileSource | string)[]): Promise<void> {
  for (let k = 0; k < opened.length; k++) {
    const o = opened[k];
    if (o !== undefined && typeof o !== 'string') await o.close();
  }
}

/** The index of the first file that is not in the open layout; a file that cannot be read is left to the reader to report. */
async function firstForeignFile(opened: readonly (FileSource | string)[]): Promise<number | undefined> {
  for (let i = 0; i < opened.length; i++) {
    const source = opened[i];
    if (source === undefined || typeof source === 'string') continue;
    try {
      const n = Math.min(BLOB_MAGIC.length, source.size);
      if (layoutOf(n === 0 ? new Uint8Array() : await source.read(0, n, 'blob magic'), source.size) === 'foreign') return i;
    } catch (error) {
      if (!(error instanceof PopefError)) throw error;
    }
  }
  return undefined;
}

/** The config against the PopEF files of one version, read as one model set. */
async function againstOpenLayout(
  paths: readonly string[],
  sources: readonly (FileSource | string)[],
  shown: readonly string[],
  check: VersionCheck,
  config: ModelConfig,
): Promise<RawFinding[]> {
  let set: ModelSet | undefined;
  try {
    // ModelSet.open closes what it was given when it fails.
    set = await ModelSet.open(sources);
    if (set.models.length !== 1) {
      return [
        {
          rule: 'popef/unreadable',
          unusable: POPEF,
          message: `${shown.join(' + ')} hold${shown.length === 1 ? 's' : ''} ${set.models.length} models; the Poplar backend serves one per version`,
          file: shown[0],
          hint: 'keep one model per version directory',
        },
      ];
    }
    const opened = set.model();
    if (opened.metadata === undefined) {
      return [
        {
          rule: 'popef/unreadable',
          unusable: POPEF,
          message: `executable "${opened.name}" in ${shown.join(' + ')} has no metadata`,
          file: shown[0],
          hint: 'export the model again',
        },
      ];
    }
    return checkAgainstPopef(config, check.anchorOf, opened.metadata, set.storedTensorNames, check.model, check.wanted);
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    const index = paths.findIndex((p) => p === error.file);
    const file = shown[index] ?? shown[0];
    const where = error.offset === undefined ? '' : ` at offset ${error.offset}${error.field === undefined ? '' : ` (${error.field})`}`;
    return [
      {
        rule: 'popef/unreadable',
        unusable: POPEF,
        message: `${file ?? 'PopEF'}${where}: ${error.message} [${error.code}]`,
        ...(file === undefined ? {} : { file }),
        ...(error.suggestion === undefined ? {} : { hint: error.suggestion }),
      },
    ];
  } finally {
    await set?.close();
  }
}

/** The config against a description's one model. */
function againstDescription(
  description: Pick<PopefDescription, 'models'>,
  file: string,
  check: VersionCheck & { config: ModelConfig },
): RawFinding[] {
  try {
    const { metadata, storedTensorNames } = describedModel(description, file);
    return checkAgainstPopef(check.config, check.anchorOf, metadata, storedTensorNames, check.model, check.wanted);
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    return [
      {
        rule: 'popef/unreadable',
        unusable: POPEF,
        message: `${file}: ${error.message}`,
        file,
        ...(error.suggestion === undefined ? {} : { hint: error.suggestion }),
      },
    ];
  }
}

/** A file's size, and its SHA-256 when asked. */
async function sizeAndHash(path: string, hash: boolean): Promise<{ size: number; sha256?: string }> {
  const source = await FileSource.open(path);
  try {
    return hash ? { size: source.size, sha256: await sha256Of(source) } : { size: source.size };
  } finally {
    await source.close();
  }
}

/** A stale description: one that does not describe the files beside it. */
async function staleness(description: PopefDescription, check: VersionCheck, file: string): Promise<RawFinding | undefined> {
  const beside = new Set(check.version.popefFiles);
  for (const d of description.files) {
    if (!beside.has(d.name)) continue;
    const { size, sha256 } = await sizeAndHash(join(check.versionDir, d.name), check.verify);
    const why =
      size !== d.size
        ? `it records ${d.size} bytes for ${d.name}, which has ${size}`
        : sha256 !== undefined && sha256 !== d.sha256
          ? `the SHA-256 it records for ${d.name} is not the file's`
          : undefined;
    if (why !== undefined) {
      return {
        rule: 'popef/stale-description',
        unusable: POPEF,
        message: `the PopEF description ${file} does not describe the file beside it: ${why}; anchors not cross-checked`,
        file,
        hint: `write it again from the new export: popef describe ${check.versionPath}/${d.name} --force`,
      };
    }
  }
  const missing = check.version.popefFiles.filter((f) => !description.files.some((d) => d.name === f));
  if (missing.length > 0) {
    return {
      rule: 'popef/stale-description',
      unusable: POPEF,
      message: `the PopEF description ${file} does not describe ${missing.join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} beside it; anchors not cross-checked`,
      file,
      hint: `write it again: popef describe ${check.version.popefFiles.map((f) => `${check.versionPath}/${f}`).join(' ')} --force`,
    };
  }
  return undefined;
}

/** The description committed in the version: FILE.json for its first PopEF file, else (no PopEF) the one description there. */
function descriptionName(version: Pick<VersionDirectory, 'files' | 'popefFiles'>): string | undefined {
  const first = version.popefFiles[0];
  if (first !== undefined) return version.files.includes(descriptionPathOf(first)) ? descriptionPathOf(first) : undefined;
  const all = version.files.filter(isDescriptionName).sort();
  return all.includes('executable.popef.json') ? 'executable.popef.json' : all[0];
}

async function readDescription(check: VersionCheck, name: string): Promise<{ description: PopefDescription } | { finding: RawFinding }> {
  const file = `${check.versionPath}/${name}`;
  try {
    return {
      description: parseDescription(
        await readRegularText(join(check.versionDir, name), { what: 'the PopEF description', limit: FILE_LIMITS.json }),
        file,
      ),
    };
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    return {
      finding: {
        rule: 'popef/unreadable',
        unusable: POPEF,
        message: `${file}: ${error.message}`,
        file,
        ...(error.suggestion === undefined ? {} : { hint: error.suggestion }),
      },
    };
  }
}

/** Cross-checks one served version of a poplar model. */
export async function crossCheckVersion(check: VersionCheck): Promise<VersionOutcome> {
  const { versionPath, version } = check;
  const files = version.popefFiles.map((f): PopefToOpen => ({
    path: childPath(check.versionDir, f),
    listedRegular: version.regular?.has(f) === true,
  }));
  const paths = files.map((f) => f.path);
  const opened = await openAll(files);
  const foreign = await firstForeignFile(opened).catch(async (error: unknown) => {
    await closeAll(opened);
    throw error;
  });
  const skipUnusable = (): VersionOutcome => ({ findings: [], skipped: check.unusable });
  const config = check.config;
  if (paths.length > 0 && foreign === undefined && config !== undefined) {
    return {
      findings: await againstOpenLayout(
        paths,
        opened,
        version.popefFiles.map((f) => `${versionPath}/${f}`),
        check,
        config,
      ),
    };
  }
  await closeAll(opened);
  if (paths.length > 0 && foreign === undefined) return skipUnusable();
  const foreignFile = foreign === undefined ? undefined : `${versionPath}/${version.popefFiles[foreign] ?? ''}`;
  if (paths.length > 0 && check.readForeignPopef !== undefined) {
    const read = await check.readForeignPopef(paths);
    if (read !== undefined) {
      if (config === undefined) return skipUnusable();
      return { findings: againstDescription(read, foreignFile ?? versionPath, { ...check, config }) };
    }
  }
  const name = descriptionName(version);
  if (name === undefined) {
    return foreignFile === undefined
      ? { findings: [], notDone: { kind: 'no-popef', versionPath }, skipped: `no PopEF file in ${versionPath}` }
      : { findings: [], notDone: { kind: 'foreign', file: foreignFile }, skipped: `${foreignFile} is not in the PopEF open layout` };
  }
  const file = `${versionPath}/${name}`;
  const read = await readDescription(check, name);
  if ('finding' in read) return { findings: [read.finding], skipped: `${file} is not usable` };
  const stale = await staleness(read.description, check, file);
  if (stale !== undefined) return { findings: [stale], skipped: `${file} is stale` };
  const findings: RawFinding[] = [];
  if (paths.length === 0) {
    const described = read.description.files.map((d) => d.name).join(', ');
    findings.push({
      rule: 'popef/description-only',
      message: `model '${check.model}' is cross-checked against the description ${file} alone: the file it describes (${described}) is not in ${versionPath}`,
      file,
      hint: 'commit the export beside it to have its size checked against the description, or keep it so in a config repository',
    });
  }
  if (config === undefined) return { findings, skipped: check.unusable };
  return { findings: [...findings, ...againstDescription(read.description, file, { ...check, config })] };
}
