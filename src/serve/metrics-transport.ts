import { createServer, type Server } from 'node:http';
import type { InferenceServer, TransportOptions } from './inference-server.js';
import { MetricsRegistry } from './metrics.js';
import { TransportBase, closeHttp, listenHttp } from './transport.js';

/**
 * Triton's metrics service on its own port (--metrics-port, as Triton's
 * HTTPMetricsServer, server r24.10 http_server.cc): GET /metrics is the
 * Prometheus text; any other GET is an empty 200, as there; other methods
 * are 405.
 */
export class MetricsTransport extends TransportBase {
  readonly name = 'metrics';
  readonly portFlag = '--metrics-port';
  private readonly server: Server;
  private readonly registry: MetricsRegistry;

  constructor(core: InferenceServer, options: TransportOptions) {
    super(core, options);
    this.registry = new MetricsRegistry(core);
    this.server = createServer((req, res) => {
      req.resume();
      const text = 'text/plain; charset=utf-8';
      if (req.method !== 'GET') {
        res.writeHead(405, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: 'Method Not Allowed' }));
        return;
      }
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(200, { 'Content-Type': text, 'Content-Length': '0' }).end();
        return;
      }
      this.registry.render().then(
        (body) => res.writeHead(200, { 'Content-Type': text, 'Content-Length': String(Buffer.byteLength(body)) }).end(body),
        (error: unknown) =>
          res
            .writeHead(500, { 'Content-Type': 'application/json' })
            .end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) })),
      );
    });
    this.server.keepAliveTimeout = 5000;
  }

  listen(port: number, host: string): Promise<number> {
    return listenHttp(this.server, port, host);
  }

  close(): Promise<void> {
    return closeHttp(this.server);
  }

  /** A scrape still open after the drain is cut. */
  closeAll(): void {
    this.server.closeAllConnections();
  }
}
