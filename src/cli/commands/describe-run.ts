import { link, rename, rm, writeFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { ioError } from '../../errors.js';
import { ModelSet } from '../../format/model-set.js';
import type { PopefFile } from '../../format/reader.js';
import { descriptionPathOf, describeModelSet, sha256Of, type DescribedFile } from '../../inspect/description.js';
import { tempSibling } from '../../io/temp-names.js';
import { VERSION } from '../../version.js';
import type { CliIo } from '../io.js';
import { openPopefFile } from './sources.js';

/**
 * `popef describe`: reads the files with the same opener as `popef dump`
 * (sources.ts), so it describes whatever dump can read, and writes the
 * description atomically: a temporary sibling, then link (which refuses to
 * replace a file that exists) or, with --force, rename.
 */

export interface Described {
  readonly shown: string;
  readonly models: number;
  readonly files: number;
  readonly reader: string;
}

/** Which reader read the files, for the description (the SDK's, once sources.ts reads SDK files). */
const OPEN_LAYOUT_READER = `popef-toolkit ${VERSION} open-layout reader`;

export async function describeFiles(names: readonly string[], flags: { readonly output?: string; readonly force?: boolean }, io: CliIo): Promise<Described> {
  const opened: PopefFile[] = [];
  let set: ModelSet | undefined;
  try {
    for (const name of names) opened.push(await openPopefFile(name, io));
    const files: DescribedFile[] = [];
    for (const [i, f] of opened.entries()) files.push({ name: basename(names[i] ?? f.name), size: f.source.size, sha256: await sha256Of(f.source) });
    set = await ModelSet.fromFiles(opened);
    const description = describeModelSet(set, files, OPEN_LAYOUT_READER);
    const shown = flags.output ?? descriptionPathOf(names[0] ?? '');
    const out = resolve(io.cwd, shown);
    const temp = tempSibling(out, 'tmp');
    try {
      await writeFile(temp, `${JSON.stringify(description, null, 2)}\n`, { flag: 'wx' });
      if (flags.force === true) await rename(temp, out);
      else await link(temp, out);
    } catch (error) {
      throw ioError(error, out, 'write the description');
    } finally {
      await rm(temp, { force: true });
    }
    return { shown, models: description.models.length, files: files.length, reader: description.reader };
  } finally {
    if (set !== undefined) await set.close();
    else await Promise.all(opened.map((f) => f.close()));
  }
}
