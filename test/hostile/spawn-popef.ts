import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers.js';

const BIN = join(ROOT, 'bin/popef.cjs');
const RSS_PRELOAD = join(ROOT, 'test/bench/max-rss.mjs');

export interface PopefRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall time from spawn to exit. */
  readonly ms: number;
  /** Time from `interrupt` (when given) to exit. */
  readonly stopMs?: number;
  /** Peak resident set size, MiB (when the process exited through node's exit path). */
  readonly maxRssMiB?: number;
  /** True when the process had to be killed at `timeoutMs`: a hang. */
  readonly hung: boolean;
}

export interface SpawnOptions {
  readonly cwd?: string;
  readonly env?: Record<string, string | undefined>;
  /** Kill with SIGKILL after this long and report a hang (default 20 s). */
  readonly timeoutMs?: number;
  /** Send this signal once `when` says so (default: after `afterMs`). */
  readonly interrupt?: {
    readonly signal: NodeJS.Signals;
    readonly afterMs?: number;
    readonly when?: (child: ChildProcess, stderr: () => string) => Promise<void>;
  };
}

/**
 * An interrupt moment: `afterMs` after the process has mapped a shared
 * library whose path contains `library` (Linux's /proc/PID/maps), i.e. once
 * the command is under way, so that a slow start on a loaded machine is not
 * mistaken for a slow stop (a signal that comes before the CLI has its
 * handler kills the process by the default action). Node's own handlers
 * are there from its start, so the caught-signal mask cannot tell.
 */
export function afterLoading(library: string, afterMs: number): (child: ChildProcess) => Promise<void> {
  return async (child) => {
    for (;;) {
      const maps = await readFile(`/proc/${child.pid ?? 0}/maps`, 'utf8').catch(() => undefined);
      if (maps === undefined || maps.includes(library)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, afterMs));
  };
}

/**
 * Runs the built CLI as a user would, in its own process, so that a hang,
 * a stack overflow or a stray child cannot take the test runner with it.
 */
export async function spawnPopef(args: readonly string[], options: SpawnOptions = {}): Promise<PopefRun> {
  const rssDir = await mkdtemp(join(tmpdir(), 'popef-rss-'));
  const rssFile = join(rssDir, 'rss');
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', RSS_PRELOAD, BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env, BENCH_RSS_FILE: rssFile, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let hung = false;
  const killer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? 20_000);
  let interruptedAt: number | undefined;
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (code, signal) => resolve([code, signal])));
  const interrupt = options.interrupt;
  if (interrupt !== undefined) {
    void (async () => {
      if (interrupt.when !== undefined) await interrupt.when(child, () => stderr);
      else await new Promise((r) => setTimeout(r, interrupt.afterMs ?? 500));
      interruptedAt = performance.now();
      child.kill(interrupt.signal);
    })();
  }
  const [code, signal] = await exited;
  const ended = performance.now();
  clearTimeout(killer);
  const rss = await readFile(rssFile, 'utf8').catch(() => '');
  await rm(rssDir, { recursive: true, force: true });
  const kib = Number(rss.trim().split('\n').pop());
  return {
    code,
    signal,
    stdout,
    stderr,
    ms: ended - started,
    ...(interruptedAt === undefined ? {} : { stopMs: ended - interruptedAt }),
    ...(Number.isFinite(kib) && kib > 0 ? { maxRssMiB: kib / 1024 } : {}),
    hung,
  };
}

/** Waits until `predicate` holds, polling; fails after `ms`, with `what` (what did not happen) as the message. */
export async function until(predicate: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition not reached in time'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error(what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether any process's command line contains `text` (a plugin's orphaned descendant). */
export async function processRunning(text: string): Promise<boolean> {
  const { readdir } = await import('node:fs/promises');
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.replace(/\0/g, ' ').includes(text)) return true;
  }
  return false;
}

/** A clean refusal: not a hang, the documented exit code, one error line (and a hint) matching `message`, no stack trace. */
export function assertCleanError(run: PopefRun, code: number, message: RegExp): void {
  assert.equal(run.hung, false, `hung; stderr so far: ${run.stderr}`);
  assert.equal(run.code, code, run.stderr);
  const lines = run.stderr.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^popef: error: /);
  assert.match(run.stderr, message);
  assert.ok(lines.length <= 2 && !/^\s+at /m.test(run.stderr), `more than a message and a hint:\n${run.stderr}`);
}
