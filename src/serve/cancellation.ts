/**
 * Whether a request's client has gone (a gRPC call cancelled or past its
 * deadline, an HTTP connection closed before its answer): what the
 * scheduler needs to drop a waiting request (scheduler/model-scheduler.ts).
 * An AbortSignal is one; {@link ClientGone} is a lighter one that the
 * transports make for every request: an AbortController costs several
 * microseconds to make (an EventTarget and its bookkeeping), a measurable
 * part of a small request's whole cost, and most requests never wait.
 */
export interface Cancellation {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A Cancellation set once by its transport. */
export class ClientGone implements Cancellation {
  private gone = false;
  private listeners: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.gone;
  }

  /** The client has gone: listeners are told, once. */
  set(): void {
    if (this.gone) return;
    this.gone = true;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const listener of listeners) listener();
  }

  // Every listener here is called once, so `once` needs no handling of its own.
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.gone) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.listeners = this.listeners?.filter((l) => l !== listener);
  }
}
