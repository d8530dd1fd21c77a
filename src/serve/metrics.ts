import { readFileSync } from 'node:fs';
import type * as promClient from 'prom-client';
import { importModule } from '../run/import-module.js';
import type { InferenceServer } from './inference-server.js';
import type { ModelStats } from './served-model.js';

/**
 * Triton's Prometheus metrics (core r24.10, metrics.cc and
 * metric_model_reporter.cc), as a server without GPUs prints them: the
 * per-model counters and the pending gauge from the statistics the server
 * keeps, the pinned-memory pool (none here: zero), and the CPU and memory
 * gauges read from /proc as Triton reads them. Families, names, help texts,
 * labels and their order are Triton's; the exposition format is
 * prom-client's, loaded on the first scrape only (start-up does not pay for
 * it).
 */

type PromClient = typeof promClient;

interface ModelEntry {
  readonly name: string;
  readonly version: string;
  readonly stats: ModelStats;
  readonly pending: number;
}

/** Triton's failure reasons, each a series of nv_inference_request_failure (in Triton's order). */
const FAILURE_REASONS = ['BACKEND', 'OTHER', 'CANCELED', 'REJECTED'] as const;

/** [name, help, value of a model] of each per-model counter, in Triton's order. */
const MODEL_COUNTERS: readonly [string, string, (m: ModelEntry) => number][] = [
  ['nv_inference_request_success', 'Number of successful inference requests, all batch sizes', (m) => m.stats.success.count],
  ['nv_inference_count', 'Number of inferences performed (does not include cached requests)', (m) => m.stats.inferenceCount],
  ['nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', (m) => m.stats.executionCount],
  [
    'nv_inference_request_duration_us',
    'Cumulative inference request duration in microseconds (includes cached requests)',
    (m) => us(m.stats.success.ns),
  ],
  ['nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', (m) => us(m.stats.queue.ns)],
  // The plugin copies inputs and outputs inside its run: those are counted in compute_infer, as in the statistics.
  ['nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', () => 0],
  [
    'nv_inference_compute_infer_duration_us',
    'Cumulative compute inference duration in microseconds (does not include cached requests)',
    (m) => us(m.stats.computeInfer.ns),
  ],
  [
    'nv_inference_compute_output_duration_us',
    'Cumulative inference compute output duration in microseconds (does not include cached requests)',
    () => 0,
  ],
];

function us(ns: bigint): number {
  return Number(ns / 1000n);
}

/** The aggregate line of /proc/stat: busy (user, nice, system, irq, softirq, steal) and idle (idle, iowait) ticks. */
export function cpuTicks(procStat: string): { busy: number; idle: number } | undefined {
  const line = procStat.split('\n')[0] ?? '';
  if (!line.startsWith('cpu ')) return undefined;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busy: user + nice + system + irq + softirq + steal, idle: idle + iowait };
}

/** MemTotal and MemTotal - MemAvailable of /proc/meminfo, in bytes (Triton's ParseMemInfo). */
export function memoryBytes(procMeminfo: string): { total: number; used: number } | undefined {
  const kb = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(procMeminfo);
    return m === null ? undefined : Number(m[1]) * 1024;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  if (total === undefined || available === undefined || available > total) return undefined;
  return { total, used: total - available };
}

function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export class MetricsRegistry {
  private readonly core: InferenceServer;
  private registry: Promise<{ metrics(): Promise<string> }> | undefined;
  private lastCpu: { busy: number; idle: number } | undefined;

  constructor(core: InferenceServer) {
    this.core = core;
    // Triton's first utilization covers the time since start-up.
    this.lastCpu = cpuTicks(readProc('/proc/stat'));
  }

  /** The text of a scrape. */
  async render(): Promise<string> {
    // Through importModule, which the CLI's launcher can serve (src/ARCHITECTURE.md, "The launcher and import()").
    this.registry ??= importModule('prom-client').then((loaded) => {
      const module = loaded as PromClient & { default?: PromClient };
      return this.build(typeof module.Registry === 'function' ? module : (module.default ?? module));
    });
    return (await this.registry).metrics();
  }

  private models(): ModelEntry[] {
    return this.core.statistics('', '').map((e) => ({ ...e, pending: this.core.model(e.name, e.version).scheduler.pending }));
  }

  private cpuUtilization(): number {
    const now = cpuTicks(readProc('/proc/stat'));
    if (now === undefined) return 0;
    const before = this.lastCpu ?? { busy: 0, idle: 0 };
    this.lastCpu = now;
    const busy = Math.max(0, now.busy - before.busy);
    const idle = Math.max(0, now.idle - before.idle);
    return busy + idle === 0 ? 0 : busy / (busy + idle);
  }

  private build(client: PromClient): { metrics(): Promise<string> } {
    const registry = new client.Registry();
    const models = (): ModelEntry[] => this.models();
    // Labels are given in Triton's order (alphabetical), which prom-client keeps.
    const perModel = (name: string, help: string, value: (m: ModelEntry) => number): void => {
      new client.Counter({
        name,
        help,
        labelNames: ['model', 'version'],
        registers: [registry],
        collect() {
          this.reset();
          for (const m of models()) this.inc({ model: m.name, version: m.version }, value(m));
        },
      });
    };
    const [success, ...rest] = MODEL_COUNTERS;
    if (success !== undefined) perModel(...success);
    new client.Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes',
      labelNames: ['model', 'reason', 'version'],
      registers: [registry],
      collect() {
        this.reset();
        // A failure here is the plugin's (Triton's BACKEND); requests refused before they reach the model are not counted, as in Triton.
        for (const m of models())
          for (const reason of FAILURE_REASONS)
            this.inc({ model: m.name, reason, version: m.version }, reason === 'BACKEND' ? m.stats.fail.count : 0);
      },
    });
    for (const counter of rest) perModel(...counter);
    new client.Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of pending requests awaiting execution per-model.',
      labelNames: ['model', 'version'],
      registers: [registry],
      collect() {
        this.reset();
        for (const m of models()) this.set({ model: m.name, version: m.version }, m.pending);
      },
    });
    const gauge = (name: string, help: string, value: () => number): void => {
      new client.Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(value());
        },
      });
    };
    // No pinned host memory is allocated here: the pool is empty.
    gauge('nv_pinned_memory_pool_total_bytes', 'Pinned memory pool total memory size, in bytes', () => 0);
    gauge('nv_pinned_memory_pool_used_bytes', 'Pinned memory pool used memory size, in bytes', () => 0);
    gauge('nv_cpu_utilization', 'CPU utilization rate [0.0 - 1.0]', () => this.cpuUtilization());
    gauge('nv_cpu_memory_total_bytes', 'CPU total memory (RAM), in bytes', () => memoryBytes(readProc('/proc/meminfo'))?.total ?? 0);
    gauge('nv_cpu_memory_used_bytes', 'CPU used memory (RAM), in bytes', () => memoryBytes(readProc('/proc/meminfo'))?.used ?? 0);
    return registry;
  }
}
