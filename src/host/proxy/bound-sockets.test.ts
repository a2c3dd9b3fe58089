import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProcNet } from './bound-sockets.ts';

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
