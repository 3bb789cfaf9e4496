// A TCP proxy in front of PostgreSQL that can be cut off, as by a network partition, a failover
// to another address or a proxy that hangs: after `partition()`, the connections open at that
// moment never pass another byte, in either direction, and stay open (neither end sees an error:
// only a client-side timeout can end a query's wait); connections opened during the partition
// wait (their bytes held, as TCP holds and resends them) and pass once `heal()` is called.
import net from 'node:net';

export interface SilentProxy {
  /** A URL like `target` that connects through the proxy. */
  url: string;
  partition(): void;
  heal(): void;
  /** Connections the proxy has accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

export async function startSilentProxy(target: string): Promise<SilentProxy> {
  const upstream = new URL(target);
  let partitioned = false;
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  /** Opened during the partition: held until it heals. */
  const held = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    accepted++;
    const server = net.connect(Number(upstream.port || 5432), upstream.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        held.delete(socket);
      });
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
      if (partitioned) {
        socket.pause();
        held.add(socket);
      }
    }
    // A paused socket reads nothing: its bytes wait in the kernel's buffers, as in flight.
    client.pipe(server);
    server.pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((proxy.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    partition: () => {
      partitioned = true;
      for (const socket of sockets) socket.pause();
    },
    heal: () => {
      partitioned = false;
      for (const socket of held) socket.resume();
      held.clear();
    },
    accepted: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
