import { basename, resolve } from 'node:path';
import { ModelSet } from '../../format/model-set.js';
import type { PopefFile } from '../../format/reader.js';
import { descriptionPathOf, describeModelSet, sha256Of, type DescribedFile } from '../../inspect/description.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import { VERSION } from '../../version.js';
import type { CliIo } from '../io.js';
import { openPopef } from './open-popef.js';
import { openSource } from './sources.js';

/**
 * `popef describe`: reads the files with the same opener as `popef dump`
 * (open-popef.ts: the open layout, or the SDK's reader where it is installed), so it describes whatever dump can read, and writes the
 * description atomically (triton/write-files.ts).
 */

export interface Described {
  readonly shown: string;
  readonly models: number;
  readonly files: number;
  readonly reader: string;
}

/** Which reader read the files, as the description records it. */
function readerName(readers: readonly ('open-layout' | 'poplar-sdk')[], sdkVersion: string | null | undefined): string {
  if (readers.every((r) => r === 'open-layout')) return `popef-toolkit ${VERSION} open-layout reader`;
  return `Poplar SDK ${sdkVersion ?? '(release not reported)'} popef.Reader, through popef-toolkit ${VERSION}'s bridge`;
}

export async function describeFiles(
  names: readonly string[],
  flags: { readonly output?: string; readonly force?: boolean },
  io: CliIo,
): Promise<Described> {
  const opened: PopefFile[] = [];
  let set: ModelSet | undefined;
  try {
    // Size and SHA-256 are of the files as given: an SDK-written file is read through an open-layout copy, which they must not describe.
    const files: DescribedFile[] = [];
    for (const name of names) {
      const source = await openSource(name, io);
      try {
        files.push({ name: basename(name), size: source.size, sha256: await sha256Of(source) });
      } finally {
        await source.close();
      }
    }
    const readers: ('open-layout' | 'poplar-sdk')[] = [];
    let sdkVersion: string | null | undefined;
    for (const name of names) {
      const o = await openPopef(name, io);
      opened.push(o.file);
      readers.push(o.readBy.reader);
      sdkVersion ??= o.readBy.sdkVersion;
    }
    set = await ModelSet.fromFiles(opened);
    const description = describeModelSet(set, files, readerName(readers, sdkVersion));
    const shown = flags.output ?? descriptionPathOf(names[0] ?? '');
    // The one atomic write every command uses: refuses an existing file without --force, leaves nothing half-written.
    await writeFilesAtomically([{ path: resolve(io.cwd, shown), content: `${JSON.stringify(description, null, 2)}\n` }], {
      force: flags.force === true,
    });
    return { shown, models: description.models.length, files: files.length, reader: description.reader };
  } finally {
    if (set !== undefined) await set.close();
    else await Promise.all(opened.map((f) => f.close()));
  }
}
