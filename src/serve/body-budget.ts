import { RequestError } from './status.js';

/**
 * The bytes of request bodies held in memory across every request and
 * connection of a server, HTTP bodies and gRPC messages alike.
 * --max-request-size bounds one body; this bounds them all: without it, 60
 * clients each sending just under the per-request limit hold 60 of them at
 * once (3.8 GB measured at 64 MiB). A body that would take the total past
 * the limit is refused ({@link BudgetExhausted}) as it arrives: over HTTP
 * with 503 (Triton's UNAVAILABLE); over gRPC (the bytes of each HTTP/2
 * stream, grpc-server.ts) with RESOURCE_EXHAUSTED, the code gRPC
 * servers answer a message they have no room for. What a request reserved is given back when its
 * answer is sent or its client has gone.
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  /** Bytes held now. */
  get bytes(): number {
    return this.held;
  }

  /** A reservation that grows chunk by chunk; `release` gives it all back (once). */
  open(): BodyReservation {
    let mine = 0;
    let released = false;
    return {
      take: (n: number): void => {
        if (released) return;
        if (this.held + n > this.limit) {
          throw new BudgetExhausted(
            `the server is holding ${this.held} bytes of request bodies, the most it buffers at once (--max-buffered ${this.limit}); try again when the running requests have finished`,
          );
        }
        this.held += n;
        mine += n;
      },
      release: (): void => {
        if (released) return;
        released = true;
        this.held -= mine;
        mine = 0;
      },
    };
  }
}

/** A body refused for want of room in the budget: UNAVAILABLE (HTTP 503); the gRPC transport answers RESOURCE_EXHAUSTED. */
export class BudgetExhausted extends RequestError {
  constructor(message: string) {
    super('UNAVAILABLE', message);
    this.name = 'BudgetExhausted';
  }
}

export interface BodyReservation {
  /** Counts `n` more bytes held; throws (UNAVAILABLE) past the server's limit. */
  take(n: number): void;
  release(): void;
}
