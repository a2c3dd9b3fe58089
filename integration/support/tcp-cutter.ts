import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of `targetPort` that cuts every connection once it has passed
 * `afterBytes` bytes from the server (TLS passes through untouched): a connection dropped
 * mid-download. `cut()` says how many connections it cut.
 */
export async function startTcpCutter(
  targetPort: number,
  afterBytes: number,
): Promise<{ port: number; cut(): number; close(): Promise<void> }> {
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let passed = 0;
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      passed += d.length;
      if (passed > afterBytes) {
        cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(d);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => cuts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
