import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatIpv6,
  ipv4AddressesByInterface,
  parseFibTrieLocal,
  parseIfInet6,
  parseIpv4Routes,
  parseNetDev,
} from './parse-proc-net.ts';

const NET_DEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth7:      90       1    2    3    0     0          0         0      180       4    5    6    0     0       0          0
`;

const FIB_TRIE = `Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.0.3.0/24 2 0 2
        +-- 10.0.3.0/28 2 0 2
           |-- 10.0.3.0
              /24 link UNICAST
           |-- 10.0.3.7
              /32 host LOCAL
        |-- 10.0.3.255
           /32 link BROADCAST
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 10.0.3.7
        /32 host LOCAL
     |-- 192.0.2.9
        /32 host LOCAL
`;

const ROUTE = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	0103000A	0003	0	0	0	00000000	0	0	0
eth0	0003000A	00000000	0001	0	0	0	00FFFFFF	0	0	0
eth1	0000000A	00000000	0001	0	0	0	000000FF	0	0	0
`;

describe('proc net parsers', () => {
  it('reads /proc/net/dev counters', () => {
    const m = parseNetDev(NET_DEV);
    assert.deepEqual([...m.keys()], ['lo', 'eth7']);
    assert.deepEqual(m.get('eth7'), {
      bytesReceived: 90,
      packetsReceived: 1,
      errorsReceived: 2,
      packetsDroppedInbound: 3,
      bytesSent: 180,
      packetsSent: 4,
      errorsSent: 5,
      packetsDroppedOutbound: 6,
    });
  });

  it('formats IPv6 addresses like RFC 5952', () => {
    assert.equal(formatIpv6('00000000000000000000000000000001'), '::1');
    assert.equal(formatIpv6('fe80000000000000001122fffe334455'), 'fe80::11:22ff:fe33:4455');
    assert.equal(formatIpv6('20010db8000000010000000000000000'), '2001:db8:0:1::');
    assert.equal(formatIpv6('20010db8000100000001000000000001'), '2001:db8:1:0:1::1');
    assert.equal(formatIpv6('20010db8000100020003000400050006'), '2001:db8:1:2:3:4:5:6');
  });

  it('reads /proc/net/if_inet6', () => {
    assert.deepEqual(
      parseIfInet6(
        '00000000000000000000000000000001 01 80 10 80       lo\nfe80000000000000001122fffe334455 02 40 20 c0     eth7\n20010db8000000000000000000000005 02 40 00 00 eth7\n',
      ),
      [
        { iface: 'lo', address: { family: 'inet6', address: '::1', netmask: '128', scope: 'local' } },
        {
          iface: 'eth7',
          address: { family: 'inet6', address: 'fe80::11:22ff:fe33:4455', netmask: '64', scope: 'link' },
        },
        { iface: 'eth7', address: { family: 'inet6', address: '2001:db8::5', netmask: '64', scope: 'global' } },
      ],
    );
  });

  it('maps fib_trie local addresses to interfaces through the route table', () => {
    assert.deepEqual(parseFibTrieLocal(FIB_TRIE), ['10.0.3.7', '127.0.0.1', '192.0.2.9']);
    const routes = parseIpv4Routes(ROUTE);
    assert.deepEqual(routes[1], { iface: 'eth0', destination: 0x0a000300, mask: 0xffffff00 });
    assert.deepEqual(ipv4AddressesByInterface(['10.0.3.7', '127.0.0.1', '192.0.2.9', '10.9.9.9'], routes), [
      { iface: 'eth0', address: { family: 'inet', address: '10.0.3.7', netmask: '24', scope: 'global' } },
      { iface: 'lo', address: { family: 'inet', address: '127.0.0.1', netmask: '8', scope: 'local' } },
      { iface: 'eth1', address: { family: 'inet', address: '10.9.9.9', netmask: '8', scope: 'global' } },
    ]);
  });
});
