import { ErrorCode, PopefError } from '../../errors.js';
import { type ModelSet } from '../../format/model-set.js';
import { diffModelSets, diffModelSetsReadingPayloads } from '../../inspect/diff.js';
import { chooseColour } from '../../present/colour.js';
import { renderDiffMarkdown, renderDiffText } from '../../present/diff-report.js';
import { withPrintableStrings } from '../../present/printable.js';
import { ExitCode } from '../exit-codes.js';
import { writeJson, type CliIo } from '../io.js';
import { openModelSet } from './open-popef.js';
import { isUrl } from './sources.js';

export async function diffCommand(
  files: readonly string[],
  bCount: number | undefined,
  flags: { json?: boolean; markdown?: boolean; ignore?: string[]; color?: boolean },
  io: CliIo,
): Promise<number> {
  if (flags.json === true && flags.markdown === true) throw new PopefError(ErrorCode.InvalidInput, '--json and --markdown are exclusive', {});
  let a: readonly string[];
  let b: readonly string[];
  if (bCount === undefined) {
    if (files.length !== 2) {
      throw new PopefError(ErrorCode.InvalidInput, `give two files (popef diff A B), or separate the two sides with -- (got ${files.length} files)`, {
        suggestion: 'popef diff executable.popef variables.popef -- new/executable.popef new/variables.popef',
      });
    }
    a = files.slice(0, 1);
    b = files.slice(1);
  } else {
    a = files.slice(0, files.length - bCount);
    b = files.slice(files.length - bCount);
    if (a.length === 0 || b.length === 0) throw new PopefError(ErrorCode.InvalidInput, 'each side of -- needs at least one file', {});
  }
  // Blob sizes are compared: an SDK-written file is read whole.
  const open = (names: readonly string[]): Promise<ModelSet> => openModelSet(names, io);
  const left = await open(a);
  try {
    const right = await open(b);
    try {
      // Compressed executables are inflated only when both sides are local: a URL's payload would be fetched whole.
      const remote = [...a, ...b].some(isUrl);
      const report = remote
        ? diffModelSets(left, right, { ignore: flags.ignore })
        : await diffModelSetsReadingPayloads(left, right, { ignore: flags.ignore });
      if (flags.json === true) writeJson(io, report);
      else if (flags.markdown === true) io.stdout(renderDiffMarkdown(withPrintableStrings(report)));
      else io.stdout(renderDiffText(withPrintableStrings(report), await chooseColour({ flag: flags.color, env: io.env, isTTY: io.stdoutIsTTY })));
      return report.identical ? ExitCode.Ok : ExitCode.Findings;
    } finally {
      await right.close();
    }
  } finally {
    await left.close();
  }
}
