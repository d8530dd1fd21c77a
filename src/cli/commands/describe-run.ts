import { basename, resolve } from 'node:path';
import { ModelSet } from '../../format/model-set.js';
import type { PopefFile } from '../../format/reader.js';
import { descriptionPathOf, describeModelSet, sha256Of, type DescribedFile, type PopefDescription } from '../../inspect/description.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import { VERSION } from '../../version.js';
import type { CliIo } from '../io.js';
import { openPopef, type ReadBy } from './open-popef.js';
import { openSource } from './sources.js';

/**
 * `popef describe`, and the description `popef scaffold` writes beside an
 * SDK-written file it places: both read the files with the same opener as
 * `popef dump` (open-popef.ts: the open layout, or the SDK's reader where it
 * is installed), so a description holds whatever dump can read.
 */

export interface Described {
  readonly shown: string;
  readonly models: number;
  readonly files: number;
  readonly reader: string;
}

/** A file to describe, and the name the description records for it (its base name, or the name it will have once placed). */
export interface FileToDescribe {
  readonly path: string;
  readonly recordedName: string;
}

/** Which reader read the files, as the description records it. */
function readerName(readers: readonly ReadBy[]): string {
  if (readers.every((r) => r.reader === 'open-layout')) return `popef-toolkit ${VERSION} open-layout reader`;
  const sdkVersion = readers.find((r) => r.sdkVersion !== undefined)?.sdkVersion;
  return `Poplar SDK ${sdkVersion ?? '(release not reported)'} popef.Reader, through popef-toolkit ${VERSION}'s bridge`;
}

/** Describes the files as one model set. Names in the description are the recorded names, in the models' `file` fields too. */
export async function describePopefFiles(files: readonly FileToDescribe[], io: CliIo): Promise<PopefDescription> {
  const opened: PopefFile[] = [];
  const readers: ReadBy[] = [];
  let set: ModelSet | undefined;
  try {
    for (const f of files) {
      const o = await openPopef(f.path, io);
      opened.push(o.file);
      readers.push(o.readBy);
    }
    set = await ModelSet.fromFiles(opened);
    return await describeOpenSet(set, readers, files, io);
  } finally {
    if (set !== undefined) await set.close();
    else await Promise.all(opened.map((f) => f.close()));
  }
}

/**
 * Describes a model set already open (as scaffold has it, so that an
 * SDK-written file goes through the SDK once), read from `files` by
 * `readers`, one per file.
 */
export async function describeOpenSet(
  set: ModelSet,
  readers: readonly ReadBy[],
  files: readonly FileToDescribe[],
  io: CliIo,
): Promise<PopefDescription> {
  // Size and SHA-256 are of the files as given: an SDK-written file is read through an open-layout copy, which they must not describe.
  const described: DescribedFile[] = [];
  for (const f of files) {
    const source = await openSource(f.path, io);
    try {
      described.push({ name: f.recordedName, size: source.size, sha256: await sha256Of(source) });
    } finally {
      await source.close();
    }
  }
  // Each model names the file it came from by that file's recorded name, found by the name it was opened by:
  // by base name, two files of the same base name in different directories would both take the first one's.
  const recorded = new Map(files.map((f) => [f.path, f.recordedName]));
  return describeModelSet(set, described, readerName(readers), (file) => recorded.get(file) ?? basename(file));
}

/** The text of a description file. */
export function descriptionText(description: PopefDescription): string {
  return `${JSON.stringify(description, null, 2)}\n`;
}

export async function describeFiles(
  names: readonly string[],
  flags: { readonly output?: string; readonly force?: boolean },
  io: CliIo,
): Promise<Described> {
  const description = await describePopefFiles(
    names.map((path) => ({ path, recordedName: basename(path) })),
    io,
  );
  const shown = flags.output ?? descriptionPathOf(names[0] ?? '');
  // The one atomic write every command uses: refuses an existing file without --force, leaves nothing half-written.
  await writeFilesAtomically([{ path: resolve(io.cwd, shown), content: descriptionText(description) }], { force: flags.force === true });
  return { shown, models: description.models.length, files: names.length, reader: description.reader };
}
