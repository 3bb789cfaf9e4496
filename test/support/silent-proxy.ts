// A TCP proxy in front of PostgreSQL that can go silent: while `silence()` holds, bytes in either
// direction are dropped and the sockets stay open, as across a partition or behind a proxy that
// hangs. Neither end sees an error; only a client-side timeout can end a query's wait.
import net from 'node:net';

export interface SilentProxy {
  /** A URL like `target` that connects through the proxy. */
  url: string;
  silence(): void;
  resume(): void;
  /** Connections the proxy has accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

export async function startSilentProxy(target: string): Promise<SilentProxy> {
  const upstream = new URL(target);
  let silent = false;
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    accepted++;
    const server = net.connect(Number(upstream.port || 5432), upstream.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    client.on('data', (bytes) => silent || server.write(bytes));
    server.on('data', (bytes) => silent || client.write(bytes));
    client.on('end', () => server.end());
    server.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    silence: () => {
      silent = true;
    },
    resume: () => {
      silent = false;
    },
    accepted: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
