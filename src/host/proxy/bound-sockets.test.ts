import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { test } from 'node:test';
import { conflictIn, MAX_BIND_PROBES, parseProcNet, probeListen } from './bound-sockets.ts';

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1F91 0100007F:C000 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
`;
const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
`;
const UDP = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 5 2 0 0
`;

test('t17 /proc/net: tcp listeners only, v6 and v4-mapped addresses, udp unconnected', () => {
  assert.deepEqual(parseProcNet(TCP, 'tcp'), [{ protocol: 'tcp', address: '127.0.0.1', port: 8080 }]);
  assert.deepEqual(parseProcNet(TCP6, 'tcp'), [
    { protocol: 'tcp', address: '::1', port: 80 },
    { protocol: 'tcp', address: '127.0.0.1', port: 81 },
  ]);
  assert.deepEqual(parseProcNet(UDP, 'udp'), [{ protocol: 'udp', address: '0.0.0.0', port: 53 }]);
});

const q = (protocol: 'tcp' | 'udp', host: string, ports: number[]) => ({
  protocol,
  host,
  family: (host.includes(':') ? 6 : 4) as 4 | 6,
  ports,
  wildcard: host === '0.0.0.0' || host === '::',
});

test('t17 conflictIn: same protocol and port, same address or a wildcard on either side', () => {
  const bound = [
    { protocol: 'tcp' as const, address: '127.0.0.1', port: 80 },
    { protocol: 'udp' as const, address: '0.0.0.0', port: 53 },
  ];
  assert.deepEqual(conflictIn(bound, q('tcp', '127.0.0.1', [79, 80])), { port: 80, why: 'in use' });
  assert.deepEqual(conflictIn(bound, q('tcp', '0.0.0.0', [80])), { port: 80, why: 'in use' });
  assert.equal(conflictIn(bound, q('tcp', '127.0.0.2', [80])), undefined);
  assert.deepEqual(conflictIn(bound, q('udp', '127.0.0.9', [53])), { port: 53, why: 'in use' });
  assert.equal(conflictIn(bound, q('udp', '127.0.0.1', [80])), undefined);
});

test('t17 probeListen on the real host: a tcp listener or udp socket in the way, an address of no interface, free ports; loopback only', async () => {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const tcpPort = (server.address() as net.AddressInfo).port;
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const udpPort = sock.address().port;
  try {
    assert.deepEqual(await probeListen(q('tcp', '127.0.0.1', [tcpPort])), { port: tcpPort, why: 'in use' });
    assert.deepEqual(
      await probeListen(q('tcp', '0.0.0.0', [tcpPort])),
      { port: tcpPort, why: 'in use' },
      'a wildcard meets the specific listener',
    );
    assert.deepEqual(await probeListen(q('udp', '127.0.0.1', [udpPort])), { port: udpPort, why: 'in use' });
    assert.deepEqual(await probeListen(q('tcp', '192.0.2.1', [8080])), { port: 8080, why: 'not a local address' });
    assert.equal(
      await probeListen(q('udp', '127.0.0.1', [tcpPort])),
      undefined,
      'the tcp listener does not take the udp port',
    );
    // Many ports: /proc/net, read once.
    const range = Array.from({ length: MAX_BIND_PROBES + 1 }, (_, i) => tcpPort - MAX_BIND_PROBES + i).filter(
      (p) => p > 0,
    );
    assert.deepEqual(await probeListen(q('tcp', '127.0.0.1', range)), { port: tcpPort, why: 'in use' });
  } finally {
    server.close();
    sock.close();
  }
  // Free again once closed (the probe left nothing bound).
  await once(server, 'close');
  assert.equal(await probeListen(q('tcp', '127.0.0.1', [tcpPort])), undefined);
  assert.equal(await probeListen(q('tcp', '127.0.0.1', [tcpPort])), undefined, 'probing twice: its own probe is gone');
});
