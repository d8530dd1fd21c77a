import { resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { loadPlugin } from '../../run/load-plugin.js';
import type { ExecutionPlugin } from '../../run/plugin-api.js';
import { printable } from '../../present/printable.js';
import type { RequestLog } from '../../serve/inference-server.js';
import type { InstanceEvent } from '../../serve/served-model.js';
import { startServer } from '../../serve/server.js';
import { VERSION } from '../../version.js';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { positiveSecondsMs } from './options.js';
import type { ServeFlags } from './serve.js';

function usage(message: string, suggestion?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion });
}

export async function serveCommand(repositories: string[], flags: ServeFlags, io: CliIo): Promise<number> {
  const timeoutMs = positiveSecondsMs(flags.timeout, '--timeout');
  if (!flags.http && !flags.grpc) throw usage('--no-http and --no-grpc leave nothing to serve');
  const ports: [string, number][] = [
    ...(flags.http ? [['--http-port', flags.httpPort] as [string, number]] : []),
    ...(flags.grpc ? [['--grpc-port', flags.grpcPort] as [string, number]] : []),
    ...(flags.allowMetrics ? [['--metrics-port', flags.metricsPort] as [string, number]] : []),
  ];
  for (const [i, [flag, port]] of ports.entries()) {
    const other = ports.slice(i + 1).find(([, p]) => p === port && p !== 0);
    if (other !== undefined) throw usage(`${flag} and ${other[0]} are both ${port}`);
  }
  const pluginOptions: Record<string, string> = {};
  for (const o of flags.pluginOption ?? []) {
    const at = o.indexOf('=');
    if (at <= 0) throw usage(`--plugin-option "${o}" is not KEY=VALUE`);
    pluginOptions[o.slice(0, at)] = o.slice(at + 1);
  }
  const createPlugin = (): Promise<ExecutionPlugin> => loadPlugin(flags.plugin, { cwd: io.cwd, env: io.env, requestTimeoutMs: timeoutMs, host: `popef-toolkit ${VERSION}` });
  // A plugin that cannot run here fails the start, before any port is taken.
  const probe = await createPlugin();
  try {
    const availability = await probe.probe();
    if (!availability.available) {
      throw new PopefError(ErrorCode.PluginUnavailable, `plugin "${probe.name}" cannot run here: ${availability.reason ?? 'no reason given'}`, { suggestion: availability.hint });
    }
  } finally {
    await probe.dispose();
  }
  const log =
    flags.jsonLogs === true ? (entry: RequestLog): void => io.stderr(`${JSON.stringify({ time: new Date().toISOString(), ...entry, ms: Math.round(entry.ms * 1000) / 1000 })}\n`) : undefined;
  const server = await startServer({
    repositories: repositories.map((r) => resolve(io.cwd, r)),
    createPlugin,
    pluginOptions,
    models: flags.model,
    host: flags.host,
    httpPort: flags.http ? flags.httpPort : undefined,
    grpcPort: flags.grpc ? flags.grpcPort : undefined,
    metricsPort: flags.allowMetrics ? flags.metricsPort : undefined,
    maxRequestSize: flags.maxRequestSize,
    log,
    onInstanceEvent: (e: InstanceEvent) => io.stderr(instanceLine(e, flags.jsonLogs === true)),
    onModel: (m) => {
      const line = m.ready ? `model '${m.name}' version ${m.version}: READY` : `model '${m.name}': UNAVAILABLE: ${m.reason}`;
      io.stderr(flags.jsonLogs === true ? `${JSON.stringify({ time: new Date().toISOString(), model: m.name, version: m.version, state: m.state, reason: m.reason })}\n` : `popef serve: ${line}\n`);
    },
  });
  const where = [...server.ports].map(([name, port]) => `${name} on ${flags.host}:${port}`).join(', ');
  const models = server.core.index();
  const ready = models.filter((m) => m.state === 'READY').length;
  // Draining may take as long as the slowest running request; Triton waits up to 30 s (--exit-timeout-secs).
  io.setStopGrace?.(30_000);
  io.stderr(`popef serve: ready: ${ready} of ${models.length} models, ${where}; Ctrl-C stops\n`);
  await new Promise<void>((done) => {
    if (io.signal.aborted) done();
    else io.signal.addEventListener('abort', () => done(), { once: true });
  });
  io.stderr('popef serve: stopping: finishing the running requests\n');
  await server.stop();
  io.stderr('popef serve: stopped\n');
  io.signalIsNormalStop?.();
  return ExitCode.Ok;
}

/** An instance's change of state, for stderr: names escaped as validate and dump escape them. */
function instanceLine(e: InstanceEvent, json: boolean): string {
  if (json) return `${JSON.stringify({ time: new Date().toISOString(), ...e })}\n`;
  const what = { READY: 'READY', FAILED: 'FAILED, restarting', GIVEN_UP: 'given up' }[e.state];
  const line = `popef serve: model '${printable(e.model, true)}' instance '${printable(e.instance, true)}': ${what}: ${printable(e.reason, true)}\n`;
  return e.modelUnavailable === true ? `${line}popef serve: model '${printable(e.model, true)}': UNAVAILABLE: no instance can be started\n` : line;
}
