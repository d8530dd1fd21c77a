import type { ExecutionPlugin, OpenedModel } from '../../run/plugin-api.js';

/**
 * The instances of one model (instance_group), each its own plugin. The
 * scheduler hands batches to whichever is free. An instance whose plugin
 * fails a run (it died, or stopped answering) is closed and started again,
 * with a back-off that grows while its starts keep failing; the model
 * stays READY while any instance is running or being restarted. After
 * MAX_START_FAILURES failed starts in a row an instance is given up, and
 * when every instance is given up the model can serve nothing.
 */

export interface InstanceEvent {
  readonly model: string;
  /** Triton's instance name, `<model>_<n>`. */
  readonly instance: string;
  /** READY (started or restarted), FAILED (its plugin failed: restarting), GIVEN_UP (no more restarts). */
  readonly state: 'READY' | 'FAILED' | 'GIVEN_UP';
  readonly reason: string;
  /** Set on the GIVEN_UP of the last instance: the model is UNAVAILABLE from now on. */
  readonly modelUnavailable?: boolean;
}

export interface StartedInstance {
  readonly model: OpenedModel;
  readonly plugin: ExecutionPlugin;
}

export const MAX_START_FAILURES = 5;
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;

export class Instance {
  busy = 0;
  state: 'ready' | 'restarting' | 'given-up' = 'ready';
  /** Failed starts since the last successful one. */
  failedStarts = 0;
  timer: NodeJS.Timeout | undefined;
  constructor(
    readonly name: string,
    public current: StartedInstance | undefined,
  ) {}

  get capacity(): number {
    return Math.max(1, Math.floor(this.current?.model.maxOutstandingRuns ?? 1));
  }
}

export interface InstanceSetOptions {
  readonly model: string;
  readonly start: () => Promise<StartedInstance>;
  readonly onEvent?: (event: InstanceEvent) => void;
  /** An instance became free or ready. */
  readonly onChange: () => void;
  /** Every instance was given up: the reason of the last failure. */
  readonly onAllDown: (reason: string) => void;
}

async function stopInstance(started: StartedInstance | undefined): Promise<void> {
  if (started === undefined) return;
  await started.model.close().catch(() => undefined);
  await started.plugin.dispose().catch(() => undefined);
}

export class InstanceSet {
  private readonly all: Instance[];
  private readonly options: InstanceSetOptions;
  private closed = false;

  constructor(started: readonly StartedInstance[], options: InstanceSetOptions) {
    this.options = options;
    this.all = started.map((s, i) => new Instance(`${options.model}_${i}`, s));
  }

  get size(): number {
    return this.all.length;
  }

  /** Every instance, in instance_group order (the sequence batcher binds its slots to them). */
  get list(): readonly Instance[] {
    return this.all;
  }

  /**
   * The least busy ready instance with room for another execution: as many
   * as its plugin takes runs at once, or, for the dynamic batcher, one (a
   * Triton instance executes one batch at a time, and the requests that
   * arrive meanwhile form the next batch).
   */
  free(oneAtATime: boolean): Instance | undefined {
    let best: Instance | undefined;
    for (const i of this.all) {
      const room = oneAtATime ? 1 : i.capacity;
      if (i.state === 'ready' && i.busy < room && (best === undefined || i.busy < best.busy)) best = i;
    }
    return best;
  }

  /** Whether an instance serves, or will after its restart. */
  get alive(): boolean {
    return this.all.some((i) => i.state !== 'given-up');
  }

  /** The instance's plugin failed: take it out, and start a new one after the back-off. */
  fail(instance: Instance, reason: string): void {
    if (instance.state !== 'ready' || this.closed) return;
    instance.state = 'restarting';
    const old = instance.current;
    instance.current = undefined;
    this.options.onEvent?.({ model: this.options.model, instance: instance.name, state: 'FAILED', reason });
    void stopInstance(old);
    this.scheduleStart(instance, reason);
  }

  private scheduleStart(instance: Instance, reason: string): void {
    const delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** instance.failedStarts);
    instance.timer = setTimeout(() => void this.restart(instance, reason), delay);
    instance.timer.unref();
  }

  private async restart(instance: Instance, lastReason: string): Promise<void> {
    instance.timer = undefined;
    if (this.closed) return;
    let started: StartedInstance;
    try {
      started = await this.options.start();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      instance.failedStarts += 1;
      if (instance.failedStarts >= MAX_START_FAILURES) {
        instance.state = 'given-up';
        const last = !this.alive;
        this.options.onEvent?.({
          model: this.options.model,
          instance: instance.name,
          state: 'GIVEN_UP',
          reason: `could not be started ${instance.failedStarts} times: ${reason}`,
          ...(last ? { modelUnavailable: true } : {}),
        });
        if (last) this.options.onAllDown(`no instance of the model could be started: ${reason}`);
        return;
      }
      this.options.onEvent?.({ model: this.options.model, instance: instance.name, state: 'FAILED', reason: `could not be started: ${reason}` });
      this.scheduleStart(instance, lastReason);
      return;
    }
    if (this.isClosed()) {
      await stopInstance(started);
      return;
    }
    instance.current = started;
    instance.failedStarts = 0;
    instance.state = 'ready';
    this.options.onEvent?.({ model: this.options.model, instance: instance.name, state: 'READY', reason: `restarted after: ${lastReason}` });
    this.options.onChange();
  }

  /** (A method, so that it is read again after an await.) */
  private isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const i of this.all) if (i.timer !== undefined) clearTimeout(i.timer);
    await Promise.allSettled(
      this.all.map(async (i) => {
        const current = i.current;
        i.current = undefined;
        await stopInstance(current);
      }),
    );
  }
}
