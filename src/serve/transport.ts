import type { Server } from 'node:http';
import type { InferenceServer, TransportOptions } from './inference-server.js';

/**
 * What the server needs of a listener (HTTP, gRPC, metrics): a name and the
 * flag that sets its port, for the messages of a port in use, and
 * listen/close. startServer (server.ts) holds a list of them, as Triton's
 * main holds its HTTP, gRPC and metrics servers side by side.
 */
export interface Transport {
  /** As the start-up line and errors name it: 'HTTP', 'gRPC', 'metrics'. */
  readonly name: string;
  readonly portFlag: string;
  /** Resolves with the port bound (the one asked for, or a free one for 0). */
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting; requests running finish first. */
  close(): Promise<void>;
}

/** The fields every transport keeps: the neutral core it answers from and the options it was given. */
export abstract class TransportBase implements Transport {
  abstract readonly name: string;
  abstract readonly portFlag: string;
  protected readonly core: InferenceServer;
  protected readonly options: TransportOptions;

  constructor(core: InferenceServer, options: TransportOptions) {
    this.core = core;
    this.options = options;
  }

  abstract listen(port: number, host: string): Promise<number>;
  abstract close(): Promise<void>;
}

/** listen() of a node:http server, resolving with the port bound. */
export function listenHttp(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

/** Stops accepting connections; idle keep-alive connections are closed, busy ones finish their request. */
export function closeHttp(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
