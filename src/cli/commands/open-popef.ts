// fs.promises, loaded on first use: validate imports this module and seldom reads through the SDK (local-file.ts says why).
import { promises as fsPromises } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { ModelSet } from '../../format/model-set.js';
import { PopefFile } from '../../format/reader.js';
import { FileSource } from '../../io/file-source.js';
import { printable } from '../../present/printable.js';
import type { ChildProcessPlugin } from '../../run/child-plugin.js';
import type { CliIo } from '../io.js';
import { isUrl, openSource } from './sources.js';

/**
 * The one way the CLI's reading commands (dump, config, scaffold, diff,
 * validate) open a PopEF file. A file in the open layout is read directly.
 * A local file that is not (E_NOT_POPEF: its first blob has no open-layout
 * signature; never a damaged open-layout file) is read with the Poplar SDK's
 * own popef.Reader through the IPU bridge where the SDK is installed: the
 * bridge converts it to a temporary open-layout file, which is opened and
 * removed at once (the open handle keeps it readable). Without the SDK the
 * error stays the open layout's, with a hint naming popef doctor.
 */

/** Which reader read a file: the open layout's own, or the SDK's through the bridge. */
export interface ReadBy {
  readonly reader: 'open-layout' | 'poplar-sdk';
  /** The SDK release the bridge found (null: the SDK does not say). */
  readonly sdkVersion?: string | null;
}

export interface OpenPopefOptions {
  /** The command reads every payload (--verify). */
  readonly readAll?: boolean;
  /**
   * The bridge to read SDK files with, shared by the calls of one command
   * (validate opens many models): one Python process for all of them. When
   * absent, each call starts one and stops it.
   */
  readonly sdk?: SdkBridge;
  /** false: the command needs only metadata, anchors and the blob list, so an SDK file's executables are not copied. */
  readonly executables?: boolean;
}

export interface OpenedPopef {
  readonly file: PopefFile;
  readonly readBy: ReadBy;
}

// Without the reason the bridge gave: the hint stays the same from machine to machine, and popef doctor says why.
const SDK_HINT =
  "if the Poplar SDK wrote it, popef reads it with the SDK's own popef.Reader where the SDK is enabled, and it is not here " +
  '(run "popef doctor" to see why); or convert it once on a machine with the SDK: popef import FILE -o FILE.open.popef';

function notOpenLayout(error: unknown): error is PopefError {
  return error instanceof PopefError && error.code === ErrorCode.NotPopef;
}

/** The open layout's error, with a hint that says what reads such a file. */
function withDoctorHint(error: PopefError): PopefError {
  return new PopefError(error.code, error.message, {
    file: error.file,
    offset: error.offset,
    field: error.field,
    suggestion: SDK_HINT,
    cause: error,
  });
}

export async function openPopef(name: string, io: CliIo, options: OpenPopefOptions = {}): Promise<OpenedPopef> {
  const source = await openSource(name, io, { readAll: options.readAll });
  try {
    return { file: await PopefFile.open(source), readBy: { reader: 'open-layout' } };
  } catch (error) {
    // Standard input and URLs are not regular files the SDK could parse.
    if (!notOpenLayout(error) || name === '-' || isUrl(name)) throw error;
    const sdk = options.sdk ?? new SdkBridge(io);
    try {
      return await readThroughSdk(resolve(io.cwd, name), name, io, options.executables !== false, error, sdk);
    } finally {
      if (options.sdk === undefined) await sdk.dispose();
    }
  }
}

/** The IPU bridge, started on first use and probed once; undefined from `get` where the SDK is not there. */
export class SdkBridge {
  private started: Promise<ChildProcessPlugin | undefined> | undefined;

  constructor(private readonly io: CliIo) {}

  get(): Promise<ChildProcessPlugin | undefined> {
    this.started ??= (async () => {
      const { ipuPlugin } = await import('../../run/load-plugin.js');
      const { VERSION } = await import('../../version.js');
      const io = this.io;
      const bridge = ipuPlugin({ cwd: io.cwd, env: io.env, signal: io.signal, requestTimeoutMs: 300_000, host: `popef-toolkit ${VERSION}` });
      const available = await bridge.probe().then(
        (a) => a.available,
        () => false,
      );
      if (available) return bridge;
      await bridge.dispose();
      return undefined;
    })();
    return this.started;
  }

  async dispose(): Promise<void> {
    const bridge = await this.started;
    this.started = undefined;
    await bridge?.dispose();
  }
}

async function readThroughSdk(
  path: string,
  name: string,
  io: CliIo,
  executables: boolean,
  original: PopefError,
  sdk: SdkBridge,
): Promise<OpenedPopef> {
  const { importSdkFiles } = await import('../../run/sdk-convert.js');
  const bridge = await sdk.get();
  if (bridge === undefined) throw withDoctorHint(original);
  const dir = await fsPromises.mkdtemp(join(io.env.TMPDIR ?? tmpdir(), 'popef-sdk-read-'));
  try {
    const out = join(dir, 'open-layout.popef');
    let imported;
    try {
      imported = await importSdkFiles(bridge, [path], out, { executables, signal: io.signal });
    } catch (error) {
      // A bridge stopped mid-stream takes no further request: the next file gets a new one.
      await sdk.dispose();
      if (!(error instanceof PopefError) || error.code !== ErrorCode.Plugin) throw error;
      throw new PopefError(
        ErrorCode.NotPopef,
        `not a PopEF open-layout file, and the Poplar SDK's popef.Reader cannot read it either: ${error.message}`,
        {
          file: name,
          suggestion: 'check that the file is a complete PopEF file (popef doctor shows the SDK release the bridge found)',
          cause: error,
        },
      );
    }
    for (const w of imported.warnings) io.stderr(`popef: warning: ${printable(`${name}: ${w}`, true)}\n`);
    const file = await PopefFile.open(await FileSource.open(out, name));
    return { file, readBy: { reader: 'poplar-sdk', sdkVersion: imported.sdkVersion } };
  } finally {
    // The file is open: its bytes stay readable until it is closed.
    await fsPromises.rm(dir, { recursive: true, force: true });
  }
}

/** Opens several files as one model set's files, closing those already open when one fails. */
export async function openPopefFiles(names: readonly string[], io: CliIo, options: OpenPopefOptions = {}): Promise<OpenedPopef[]> {
  const opened: OpenedPopef[] = [];
  try {
    for (const n of names) opened.push(await openPopef(n, io, options));
    return opened;
  } catch (error) {
    await Promise.all(opened.map((o) => o.file.close()));
    throw error;
  }
}

/** The files as one model set (see openPopef for files not in the open layout), with the reader that read each. */
export async function openModelSetReadBy(
  names: readonly string[],
  io: CliIo,
  options: OpenPopefOptions = {},
): Promise<{ readonly set: ModelSet; readonly readBy: readonly ReadBy[] }> {
  const opened = await openPopefFiles(names, io, options);
  try {
    return { set: await ModelSet.fromFiles(opened.map((o) => o.file)), readBy: opened.map((o) => o.readBy) };
  } catch (error) {
    await Promise.all(opened.map((o) => o.file.close()));
    throw error;
  }
}

/** The files as one model set (see openPopef for files not in the open layout). */
export async function openModelSet(names: readonly string[], io: CliIo, options: OpenPopefOptions = {}): Promise<ModelSet> {
  return (await openModelSetReadBy(names, io, options)).set;
}
