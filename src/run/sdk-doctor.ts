import { spawnSync } from 'node:child_process';
import { isPopefError } from '../errors.js';
import type { ChildProcessPlugin } from './child-plugin.js';

/**
 * What the IPU bridge would find on this machine (`popef doctor`): the
 * Python interpreter, whether numpy and the Poplar SDK's modules import,
 * the SDK release, each SDK call of src/run/bridge/SDK-API.md present or
 * missing, and the IPUs Graphcore's gc-info lists. Asked of the bridge
 * itself, so the answer is the bridge's own view.
 */

export interface ImportStatus {
  readonly ok: boolean;
  readonly file?: string;
  readonly error?: string;
}

export interface SdkCall {
  readonly module: string;
  readonly call: string;
  readonly need: 'required' | 'guarded';
  readonly present: boolean;
}

export interface DoctorReport {
  readonly tool: 'popef-toolkit';
  readonly python: { readonly command: string; readonly found: boolean; readonly executable?: string; readonly version?: string; readonly error?: string };
  readonly imports: Readonly<Record<'numpy' | 'popef' | 'model_runtime', ImportStatus>>;
  readonly sdkVersion: string | null;
  readonly calls: readonly SdkCall[];
  readonly devices: { readonly tool: 'gc-info'; readonly found: boolean; readonly lines: readonly string[]; readonly error?: string };
  /** What stops the bridge: missing interpreter, modules or required calls. Empty: everything it needs is here. */
  readonly problems: readonly string[];
}

const NOT_RUN: ImportStatus = { ok: false, error: 'not checked: the interpreter did not start' };

function asImport(value: unknown): ImportStatus {
  const v = value as { ok?: unknown; file?: unknown; error?: unknown } | undefined;
  if (v === undefined || typeof v.ok !== 'boolean') return { ok: false, error: 'the bridge did not say' };
  return { ok: v.ok, ...(typeof v.file === 'string' ? { file: v.file } : {}), ...(typeof v.error === 'string' ? { error: v.error } : {}) };
}

/** Graphcore's device lister, when it is on PATH (bounded: 15 s, first 200 lines). */
function listDevices(env: Readonly<Record<string, string | undefined>>): DoctorReport['devices'] {
  const r = spawnSync('gc-info', ['-l'], { encoding: 'utf8', timeout: 15_000, env: { ...env }, maxBuffer: 1 << 20 });
  if (r.error !== undefined) {
    const code = (r.error as NodeJS.ErrnoException).code;
    return { tool: 'gc-info', found: false, lines: [], error: code === 'ENOENT' ? 'gc-info is not on PATH (it comes with the Poplar SDK and IPU drivers)' : r.error.message };
  }
  const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '').slice(0, 200);
  return { tool: 'gc-info', found: true, lines, ...(r.status === 0 ? {} : { error: `gc-info -l exited with ${r.status ?? r.signal ?? 'no status'}` }) };
}

export async function diagnose(bridge: ChildProcessPlugin, pythonCommand: string, env: Readonly<Record<string, string | undefined>>): Promise<DoctorReport> {
  const devices = listDevices(env);
  try {
    await bridge.probe();
  } catch (error) {
    const message = isPopefError(error) || error instanceof Error ? error.message : String(error);
    return {
      tool: 'popef-toolkit',
      python: { command: pythonCommand, found: false, error: message },
      imports: { numpy: NOT_RUN, popef: NOT_RUN, model_runtime: NOT_RUN },
      sdkVersion: null,
      calls: [],
      devices,
      problems: [`the bridge could not start with ${pythonCommand}: ${message}`],
    };
  }
  const m: Record<string, unknown> = await bridge.withExchange({ type: 'doctor' }, [], 30_000, (reply) => Promise.resolve(reply.message));
  const python = (m.python ?? {}) as { executable?: unknown; version?: unknown };
  const imports = (m.imports ?? {}) as Record<string, unknown>;
  const calls: SdkCall[] = (Array.isArray(m.calls) ? m.calls : []).flatMap((c: unknown) => {
    const x = c as { module?: unknown; call?: unknown; need?: unknown; present?: unknown };
    return typeof x.module === 'string' && typeof x.call === 'string' && (x.need === 'required' || x.need === 'guarded') && typeof x.present === 'boolean'
      ? [{ module: x.module, call: x.call, need: x.need, present: x.present }]
      : [];
  });
  const report = {
    python: { command: pythonCommand, found: true, ...(typeof python.executable === 'string' ? { executable: python.executable } : {}), ...(typeof python.version === 'string' ? { version: python.version } : {}) },
    imports: { numpy: asImport(imports.numpy), popef: asImport(imports.popef), model_runtime: asImport(imports.model_runtime) },
    sdkVersion: typeof m.sdkVersion === 'string' ? m.sdkVersion : null,
  };
  const problems: string[] = [];
  for (const [name, status] of Object.entries(report.imports)) if (!status.ok) problems.push(`${name} does not import: ${status.error ?? 'no reason given'}`);
  const sdkImports = report.imports.popef.ok && report.imports.model_runtime.ok;
  if (sdkImports) for (const c of calls) if (c.need === 'required' && !c.present) problems.push(`${c.module}.${c.call} is missing`);
  return { tool: 'popef-toolkit', ...report, calls, devices, problems };
}
