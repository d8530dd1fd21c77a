import { resolve } from 'node:path';
import { loadPlugin } from '../../run/load-plugin.js';
import type { ExecutionPlugin } from '../../run/plugin-api.js';
import { printable } from '../../present/printable.js';
import type { RequestLog } from '../../serve/inference-server.js';
import type { InstanceEvent } from '../../serve/served-model.js';
import { startServer } from '../../serve/server.js';
import { VERSION } from '../../version.js';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { pluginOptions, positiveSecondsMs, usage } from './options.js';
import { assertAvailable } from './plugin-choice.js';
import type { ServeFlags } from './serve.js';

export async function serveCommand(repositories: string[], flags: ServeFlags, io: CliIo): Promise<number> {
  const timeoutMs = positiveSecondsMs(flags.timeout, '--timeout');
  if (!flags.http && !flags.grpc) throw usage('--no-http and --no-grpc leave nothing to serve');
  if (flags.loadModel !== undefined && flags.modelControlMode !== 'explicit')
    throw usage('--load-model needs --model-control-mode explicit', 'in the other modes every model loads at start');
  const ports: [string, number][] = [
    ...(flags.http ? [['--http-port', flags.httpPort] as [string, number]] : []),
    ...(flags.grpc ? [['--grpc-port', flags.grpcPort] as [string, number]] : []),
    ...(flags.allowMetrics ? [['--metrics-port', flags.metricsPort] as [string, number]] : []),
  ];
  for (const [i, [flag, port]] of ports.entries()) {
    const other = ports.slice(i + 1).find(([, p]) => p === port && p !== 0);
    if (other !== undefined) throw usage(`${flag} and ${other[0]} are both ${port}`);
  }
  const options = pluginOptions(flags.pluginOption);
  if (flags.reference !== undefined) {
    if (Object.hasOwn(options, 'reference')) throw usage('--reference and --plugin-option reference=... both give the graph; keep one');
    options.reference = resolve(io.cwd, flags.reference);
  }
  for (const m of flags.referenceMap ?? []) {
    const at = m.indexOf('=');
    if (at <= 0) throw usage(`--reference-map "${m}" is not ANCHOR=NAME`);
    options[`map.${m.slice(0, at)}`] = m.slice(at + 1);
  }
  const createPlugin = (): Promise<ExecutionPlugin> =>
    loadPlugin(flags.plugin, { cwd: io.cwd, env: io.env, requestTimeoutMs: timeoutMs, host: `popef-toolkit ${VERSION}` });
  // A plugin that cannot run here fails the start, before any port is taken.
  const probe = await createPlugin();
  try {
    await assertAvailable(probe);
  } finally {
    await probe.dispose();
  }
  const log =
    flags.jsonLogs === true
      ? (entry: RequestLog): void =>
          io.stderr(`${JSON.stringify({ time: new Date().toISOString(), ...entry, ms: Math.round(entry.ms * 1000) / 1000 })}\n`)
      : undefined;
  const server = await startServer({
    repositories: repositories.map((r) => resolve(io.cwd, r)),
    createPlugin,
    pluginOptions: options,
    models: flags.model,
    host: flags.host,
    httpPort: flags.http ? flags.httpPort : undefined,
    grpcPort: flags.grpc ? flags.grpcPort : undefined,
    metricsPort: flags.allowMetrics ? flags.metricsPort : undefined,
    maxRequestSize: flags.maxRequestSize,
    ...(flags.maxBuffered === undefined ? {} : { maxBufferedBytes: flags.maxBuffered }),
    modelControl: { mode: flags.modelControlMode, loadModels: flags.loadModel, pollSeconds: flags.repositoryPollSecs },
    log,
    onInstanceEvent: (e: InstanceEvent) => io.stderr(instanceLine(e, flags.jsonLogs === true)),
    onModel: (m) => {
      // A model's name is a directory name: one holding ESC or a newline must not recolour the terminal or forge a log line.
      const name = printable(m.name, true);
      const line = m.ready ? `model '${name}' version ${m.version}: READY` : `model '${name}': UNAVAILABLE: ${printable(m.reason, true)}`;
      io.stderr(
        flags.jsonLogs === true
          ? `${JSON.stringify({ time: new Date().toISOString(), model: m.name, version: m.version, state: m.state, reason: m.reason })}\n`
          : `popef serve: ${line}\n`,
      );
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
