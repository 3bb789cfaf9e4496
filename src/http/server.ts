// Serves the app over HTTP, or HTTPS when TLS_CERT_FILE/TLS_KEY_FILE are set.
// Closing stops accepting connections and waits for in-flight requests (uploads included).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Runtime } from '../runtime.ts';
import { createApp } from './app.ts';

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

export async function startHttpServer(runtime: Runtime, port = runtime.config.port, host = runtime.config.host): Promise<RunningServer> {
  const app = createApp(runtime);
  const { tls } = runtime.config;
  const server = tls
    ? https.createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, app.callback())
    : http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0; // large uploads on slow links
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
