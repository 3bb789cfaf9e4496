// Serves the app over HTTP, or HTTPS when TLS_CERT_FILE/TLS_KEY_FILE are set.
// Closing stops accepting connections and waits for in-flight requests (uploads included).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Runtime } from '../runtime/runtime.ts';
import { removeStaleTempUploads } from '../intake/temp-uploads.ts';
import { createApp } from './app.ts';
import { guardConnections } from '../http/connection-guards.ts';

export interface RunningServer {
  port: number;
  /**
   * Stops accepting connections and waits for in-flight requests; after `graceMs` (when given)
   * the connections still open are closed, so a trickling upload cannot hold a shutdown.
   */
  close(graceMs?: number): Promise<void>;
}

export async function startHttpServer(runtime: Runtime, port = runtime.config.port, host = runtime.config.host): Promise<RunningServer> {
  // Uploads a crashed process left half-received (docs/reliability.md).
  await removeStaleTempUploads(runtime.config.dataDir, runtime.log);
  const app = createApp(runtime);
  const { tls } = runtime.config;
  const server = tls
    ? https.createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, app.callback())
    : http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  // Large uploads on slow links may take long; a body that stalls is cut by its rate instead.
  server.requestTimeout = 0;
  guardConnections(server, runtime.config.http, runtime.log);
  // Responses in flight, so that a shutdown can tell their clients not to reuse the connection.
  const inFlight = new Set<http.ServerResponse>();
  let closing = false;
  server.on('request', (_request: http.IncomingMessage, response: http.ServerResponse) => {
    if (closing) response.setHeader('Connection', 'close');
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: (graceMs?: number) =>
      new Promise<void>((resolve) => {
        const cutOff = graceMs === undefined ? null : setTimeout(() => server.closeAllConnections(), graceMs);
        // In-flight requests (uploads included) finish; their connections then close instead of
        // idling for keepAliveTimeout, which would hold the shutdown for a minute.
        closing = true;
        for (const response of inFlight) if (!response.headersSent) response.setHeader('Connection', 'close');
        const sweep = setInterval(() => server.closeIdleConnections(), 200);
        server.close(() => {
          clearInterval(sweep);
          if (cutOff) clearTimeout(cutOff);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
