import { ModelSet } from '../../format/model-set.js';
import type { PopefFile } from '../../format/reader.js';
import { buildReport, type DumpReport, type VerifyReport } from '../../inspect/report.js';
import { verifyModelSet } from '../../inspect/verify.js';
import { chooseColour } from '../../present/colour.js';
import { renderDumpMarkdown } from '../../present/dump-markdown.js';
import { printable, withPrintableStrings } from '../../present/printable.js';
import { renderDumpText, type TextSections } from '../../present/dump-text.js';
import { progressBar } from '../../present/progress.js';
import { ExitCode } from '../exit-codes.js';
import { writeJson, type CliIo } from '../io.js';
import { reportError } from '../report-error.js';
import { openPopef, type ReadBy } from './open-popef.js';

export interface DumpOptions {
  readonly userAnchors?: boolean;
  readonly metadata?: boolean;
  readonly all?: boolean;
  readonly blobs?: boolean;
  readonly json?: boolean;
  readonly markdown?: boolean;
  readonly verify?: boolean;
}

function sectionsFor(o: DumpOptions): TextSections {
  if (o.all === true) return { metadata: 'full', anchors: 'all', blobs: true, data: true };
  const any = o.userAnchors === true || o.metadata === true || o.blobs === true;
  if (!any) return { metadata: 'summary', anchors: 'user', blobs: false, data: false };
  return {
    metadata: o.metadata === true ? 'full' : 'none',
    anchors: o.userAnchors === true ? 'user' : 'none',
    blobs: o.blobs === true,
    data: false,
  };
}

/**
 * `popef dump`: opens each file on its own (so one bad file does not hide
 * the others), reads the good ones as one model set, renders the chosen
 * view. Any error is printed and makes the exit code 2, after the report of
 * what could be read.
 */
export async function dumpFiles(
  files: readonly { path: string; name: string }[],
  options: DumpOptions,
  colourFlag: boolean | undefined,
  io: CliIo,
): Promise<number> {
  let failed = false;
  const opened: PopefFile[] = [];
  const readBy = new Map<string, ReadBy>();
  // The summary and the anchors show no blob sizes or payloads: they need nothing of an SDK file's executables.
  const executables =
    options.json === true ||
    options.markdown === true ||
    options.all === true ||
    options.blobs === true ||
    options.metadata === true ||
    options.verify === true;
  for (const f of files) {
    try {
      const o = await openPopef(f.name, io, { readAll: options.verify === true, executables });
      opened.push(o.file);
      readBy.set(o.file.name, o.readBy);
    } catch (error) {
      failed = true;
      reportError(error, io);
    }
  }
  if (opened.length === 0) return ExitCode.Error;
  let set: ModelSet;
  try {
    set = await ModelSet.fromFiles(opened);
  } catch (error) {
    await Promise.all(opened.map((f) => f.close()));
    reportError(error, io);
    return ExitCode.Error;
  }
  try {
    let verify: VerifyReport | null = null;
    if (options.verify === true) {
      const total = set.files.reduce((sum, f) => sum + f.size, 0);
      const bar = progressBar(io, 'verifying', total);
      const outcome = await verifyModelSet(set, (done, all) => bar.update(done, all), io.signal);
      bar.finish();
      verify = outcome.report;
      for (const error of outcome.errors) reportError(error, io);
      if (outcome.errors.length > 0) failed = true;
    }
    const report = withReaders(buildReport(set, verify), readBy);
    if (options.json === true) {
      writeJson(io, report);
    } else if (options.markdown === true) {
      io.stdout(renderDumpMarkdown(withPrintableStrings(report)));
    } else {
      const colour = await chooseColour({ flag: colourFlag, env: io.env, isTTY: io.stdoutIsTTY });
      const sections = sectionsFor(options);
      const shown = withPrintableStrings(report);
      const table = sections.blobs ? (await import('../../present/blob-table.js')).blobTable(shown, colour, io.stdoutColumns) : '';
      io.stdout(renderDumpText(shown, sections, colour, table));
    }
    for (const w of set.warnings) io.stderr(`popef: warning: ${printable(`${w.file}: offset ${w.offset}: ${w.message}`, true)}\n`);
  } finally {
    await set.close();
  }
  return failed ? ExitCode.Error : ExitCode.Ok;
}

/** Marks the files read with the Poplar SDK's reader, in the report. */
function withReaders(report: DumpReport, readBy: ReadonlyMap<string, ReadBy>): DumpReport {
  return {
    ...report,
    files: report.files.map((f) => {
      const r = readBy.get(f.path);
      return r?.reader === 'poplar-sdk' ? { ...f, readBy: { reader: 'poplar-sdk', sdkVersion: r.sdkVersion ?? null } } : f;
    }),
  };
}
