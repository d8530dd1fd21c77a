import { spawnSync } from 'node:child_process';
import { isPopefError } from '../errors.js';
import type { ChildProcessPlugin } from './child-plugin.js';

/**
 * What the IPU bridge would find on this machine (`popef doctor`): the
 * Python interpreter, whether numpy and the Poplar SDK's modules import,
 * the SDK release, each SDK call of src/run/bridge/SDK-API.md present or
 * absent, whether each operation (read, run, import, export) can proceed,
 * and the IPUs Graphcore's gc-info lists. Asked of the bridge itself, so
 * the answer is the bridge's own view.
 */

export interface ImportStatus {
  readonly ok: boolean;
  readonly file?: string;
  readonly error?: string;
}

export interface SdkCall {
  readonly module: string;
  readonly call: string;
  /** SDK-API.md: "inferred" calls have a Python spelling taken from C++: absent, they are unverified rather than missing. */
  readonly need: 'required' | 'inferred' | 'guarded';
  readonly present: boolean;
  /** The operations that make the call ("export:feed": only for a model with feed blobs). */
  readonly uses: readonly string[];
  /** Whether the bridge has a fallback when it is absent. */
  readonly fallback: boolean;
}

export const OPERATIONS = ['read', 'run', 'import', 'export'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Whether one operation can proceed here, for a model without feed blobs and for any model; the calls that stop it. */
export interface OperationStatus {
  readonly operation: Operation;
  readonly withoutFeeds: { readonly ok: boolean; readonly absent: readonly string[] };
  readonly anyModel: { readonly ok: boolean; readonly absent: readonly string[] };
}

export interface DoctorReport {
  readonly tool: 'popef-toolkit';
  readonly python: {
    readonly command: string;
    readonly found: boolean;
    readonly executable?: string;
    readonly version?: string;
    readonly error?: string;
  };
  readonly imports: Readonly<Record<'numpy' | 'popef' | 'model_runtime', ImportStatus>>;
  readonly sdkVersion: string | null;
  readonly calls: readonly SdkCall[];
  /** Empty when the bridge did not get as far as the SDK. */
  readonly operations: readonly OperationStatus[];
  /** Inferred calls this SDK lacks ("module.call"): their Python spelling is unverified, so they may exist under another name. */
  readonly unverified: readonly string[];
  readonly devices: { readonly tool: 'gc-info'; readonly found: boolean; readonly lines: readonly string[]; readonly error?: string };
  /** What stops reading a file or running a model without feeds: missing interpreter, modules or calls. Empty: exit 0. */
  readonly problems: readonly string[];
}

const NOT_RUN: ImportStatus = { ok: false, error: 'not checked: the interpreter did not start' };

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

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
    return {
      tool: 'gc-info',
      found: false,
      lines: [],
      error: code === 'ENOENT' ? 'gc-info is not on PATH (it comes with the Poplar SDK and IPU drivers)' : r.error.message,
    };
  }
  const lines = `${r.stdout}${r.stderr}`
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 200);
  return {
    tool: 'gc-info',
    found: true,
    lines,
    ...(r.status === 0 ? {} : { error: `gc-info -l exited with ${r.status ?? r.signal ?? 'no status'}` }),
  };
}

export async function diagnose(
  bridge: ChildProcessPlugin,
  pythonCommand: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<DoctorReport> {
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
      operations: [],
      unverified: [],
      devices,
      problems: [`the bridge could not start with ${pythonCommand}: ${message}`],
    };
  }
  const m: Record<string, unknown> = await bridge.withExchange({ type: 'doctor' }, [], 30_000, (reply) => Promise.resolve(reply.message));
  const python = (m.python ?? {}) as { executable?: unknown; version?: unknown };
  const imports = (m.imports ?? {}) as Record<string, unknown>;
  const calls: SdkCall[] = (Array.isArray(m.calls) ? m.calls : []).flatMap((c: unknown) => {
    const x = c as { module?: unknown; call?: unknown; need?: unknown; present?: unknown; uses?: unknown; fallback?: unknown };
    return typeof x.module === 'string' &&
      typeof x.call === 'string' &&
      (x.need === 'required' || x.need === 'inferred' || x.need === 'guarded') &&
      typeof x.present === 'boolean'
      ? [{ module: x.module, call: x.call, need: x.need, present: x.present, uses: strings(x.uses), fallback: x.fallback === true }]
      : [];
  });
  const operations: OperationStatus[] = (Array.isArray(m.operations) ? m.operations : []).flatMap((o: unknown) => {
    const x = o as { operation?: unknown; withoutFeeds?: unknown; anyModel?: unknown };
    if (!OPERATIONS.includes(x.operation as Operation)) return [];
    const without = strings(x.withoutFeeds);
    const any = strings(x.anyModel);
    return [
      {
        operation: x.operation as Operation,
        withoutFeeds: { ok: without.length === 0, absent: without },
        anyModel: { ok: any.length === 0, absent: any },
      },
    ];
  });
  const report = {
    python: {
      command: pythonCommand,
      found: true,
      ...(typeof python.executable === 'string' ? { executable: python.executable } : {}),
      ...(typeof python.version === 'string' ? { version: python.version } : {}),
    },
    imports: { numpy: asImport(imports.numpy), popef: asImport(imports.popef), model_runtime: asImport(imports.model_runtime) },
    sdkVersion: typeof m.sdkVersion === 'string' ? m.sdkVersion : null,
  };
  const problems: string[] = [];
  for (const [name, status] of Object.entries(report.imports))
    if (!status.ok) problems.push(`${name} does not import: ${status.error ?? 'no reason given'}`);
  const sdkImports = report.imports.popef.ok && report.imports.model_runtime.ok;
  const unverified = sdkImports ? calls.filter((c) => c.need === 'inferred' && !c.present).map((c) => `${c.module}.${c.call}`) : [];
  if (sdkImports) {
    // Exit 0 needs what reading a file and running a model without feeds call; the rest is reported per operation.
    const stopped = new Map<string, string[]>();
    for (const o of operations.filter((x) => x.operation === 'read' || x.operation === 'run')) {
      for (const name of o.withoutFeeds.absent) stopped.set(name, [...(stopped.get(name) ?? []), o.operation]);
    }
    for (const [name, ops] of stopped)
      problems.push(
        `${name} is ${unverified.includes(name) ? 'absent (an inferred spelling, unverified)' : 'missing'}: ${ops.join(' and ')} cannot proceed`,
      );
  }
  return { tool: 'popef-toolkit', ...report, calls, operations: sdkImports ? operations : [], unverified, devices, problems };
}
