// Guards on connections and request bodies, below koa: what a client that is not polite can
// hold. A body that trickles is cut (408), a response sent before its request body has arrived
// (a refused key, an oversized upload) closes the connection instead of reading the rest, and
// one peer address may hold only so many connections.
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { HttpProblem, logRefusalSetting, problemBody } from './problem.ts';

const RATE_CHECK_MS = 5_000;
const SMALL_BODY_BYTES = 64 * 1024;

export function guardConnections(server: http.Server, config: Config['http'], log?: Logger): void {
  if (config.maxConnectionsPerAddress > 0) capConnectionsPerAddress(server, config.maxConnectionsPerAddress);
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    if (!hasBody(request)) return;
    if (config.minBodyBytesPerSecond > 0) watchBodyRate(request, response, config, log);
    response.once('finish', () => {
      if (!request.complete && !isSmallBody(request)) closeUnreadBody(request);
    });
  });
}

function hasBody(request: http.IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * A small declared body is left to Node, which reads and drops the rest and keeps the connection
 * alive; a large one (or one of unknown length) is not worth reading for a response already sent.
 */
function isSmallBody(request: http.IncomingMessage): boolean {
  const declared = Number(request.headers['content-length']);
  return request.headers['transfer-encoding'] === undefined && Number.isFinite(declared) && declared <= SMALL_BODY_BYTES;
}

/** The response went out while a large body is still arriving: stop reading it and close. */
function closeUnreadBody(request: http.IncomingMessage): void {
  const socket = request.socket;
  socket.end();
  // A client still sending gets a moment to read the response, then the connection goes.
  setTimeout(() => socket.destroy(), 1_000).unref();
}

function watchBodyRate(request: http.IncomingMessage, response: http.ServerResponse, config: Config['http'], log?: Logger): void {
  const socket = request.socket;
  const windowMs = config.bodyRateWindowSeconds * 1000;
  const minBytes = config.minBodyBytesPerSecond * config.bodyRateWindowSeconds;
  const samples: Array<{ at: number; bytes: number }> = [{ at: Date.now(), bytes: socket.bytesRead }];
  const timer = setInterval(
    () => {
      if (request.complete || socket.destroyed) return stop();
      const now = Date.now();
      samples.push({ at: now, bytes: socket.bytesRead });
      while (samples.length > 1 && now - samples[1].at >= windowMs) samples.shift();
      const oldest = samples[0];
      if (now - oldest.at >= windowMs && socket.bytesRead - oldest.bytes < minBytes) {
        stop();
        refuseSlowBody(response, socket, config, log);
      }
    },
    Math.min(RATE_CHECK_MS, windowMs / 2),
  );
  timer.unref();
  // The watch ends with its request; on a kept-alive connection the socket outlives many requests,
  // so its listener is removed again rather than left to pile up until the socket closes.
  const stop = () => {
    clearInterval(timer);
    request.off('end', stop);
    request.off('close', stop);
    socket.off('close', stop);
  };
  request.once('end', stop);
  request.once('close', stop);
  socket.once('close', stop);
}

function refuseSlowBody(response: http.ServerResponse, socket: Socket, config: Config['http'], log?: Logger): void {
  if (!response.headersSent) {
    const problem = new HttpProblem(
      'request_body_too_slow',
      `The request body arrived slower than ${config.minBodyBytesPerSecond} bytes/s over ${config.bodyRateWindowSeconds} s, the slowest this service waits for; send it again over a faster connection.`,
      { setting: 'MIN_BODY_BYTES_PER_SECOND' },
    );
    logRefusalSetting(log?.child({ address: socket.remoteAddress }), problem);
    const body = JSON.stringify(problemBody(problem));
    response.writeHead(408, { 'content-type': 'application/problem+json', connection: 'close', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  }
  socket.end();
  setTimeout(() => socket.destroy(), 1_000).unref();
}

function capConnectionsPerAddress(server: http.Server, cap: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
