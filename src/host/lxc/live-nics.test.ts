import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachNicCommands, detachNicArgs, nicRouteArgs, rejoinBridgeArgs } from './live-nics.ts';
import { macvlanAttachCommands, physicalAttachCommands, physicalDetachCommands } from './live-nic-types.ts';
import { nicFilterChain, renderNicFilter, renderNicFilterRemoval } from './nic-filter.ts';
import { clearNicLimitsCommands, nicIfbOf, nicLimitsCommands } from './nic-limits.ts';

test('live nic: a veth whose peer is made in the container netns with its name, MAC and MTU; the host side on the bridge', () => {
  assert.deepEqual(
    attachNicCommands(4242, { hostName: 'veth1', name: 'eth1', parent: 'br0', hwaddr: '00:16:3e:00:00:01', mtu: 1400 }),
    [
      [
        'ip',
        [
          'link',
          'add',
          'veth1',
          'mtu',
          '1400',
          'type',
          'veth',
          'peer',
          'name',
          'eth1',
          'address',
          '00:16:3e:00:00:01',
          'mtu',
          '1400',
          'netns',
          '4242',
        ],
      ],
      ['ip', ['link', 'set', 'veth1', 'master', 'br0', 'up']],
      ['nsenter', ['-t', '4242', '-n', 'ip', 'link', 'set', 'eth1', 'up']],
    ],
  );
  assert.deepEqual(
    attachNicCommands(1, { hostName: 'v', name: 'e', parent: 'b', hwaddr: '00:16:3e:00:00:02' })[0]![1],
    ['link', 'add', 'v', 'type', 'veth', 'peer', 'name', 'e', 'address', '00:16:3e:00:00:02', 'netns', '1'],
  );
  assert.deepEqual(detachNicArgs('veth1'), ['link', 'del', 'veth1']);
  assert.deepEqual(rejoinBridgeArgs({ hostName: 'veth1', parent: 'br0' }), [
    'link',
    'set',
    'veth1',
    'master',
    'br0',
    'up',
  ]);
});

test('nic routes: via the static address of the route family, on the bridge; none without it', () => {
  assert.deepEqual(nicRouteArgs('replace', ['10.9.0.0/24', 'fd01::/64', '10.8.0.0/16'], { ipv4: '10.1.0.5' }, 'n1'), [
    ['-4', 'route', 'replace', '10.9.0.0/24', 'via', '10.1.0.5', 'dev', 'n1'],
    ['-4', 'route', 'replace', '10.8.0.0/16', 'via', '10.1.0.5', 'dev', 'n1'],
  ]);
  assert.deepEqual(nicRouteArgs('del', ['fd01::/64'], { ipv6: 'fd00::5' }, 'n1'), [
    ['-6', 'route', 'del', 'fd01::/64', 'via', 'fd00::5', 'dev', 'n1'],
  ]);
  // p2p: no address to route through, straight to the host side.
  assert.deepEqual(nicRouteArgs('replace', ['10.9.0.0/24', 'fd01::/64'], undefined, 'vp2p'), [
    ['-4', 'route', 'replace', '10.9.0.0/24', 'dev', 'vp2p'],
    ['-6', 'route', 'replace', 'fd01::/64', 'dev', 'vp2p'],
  ]);
});

test('t17 live nic types: p2p veth left alone; macvlan made in the netns; physical moved in and given back', () => {
  assert.deepEqual(attachNicCommands(7, { hostName: 'vp', name: 'eth1', parent: '', hwaddr: '00:16:3e:00:00:03' })[1], [
    'ip',
    ['link', 'set', 'vp', 'up'],
  ]);
  const nic = { name: 'eth2', parent: 't17a1', hwaddr: '00:16:3e:00:00:04', mtu: 1400 };
  assert.deepEqual(macvlanAttachCommands(7, nic), [
    [
      'ip',
      [
        'link',
        'add',
        'link',
        't17a1',
        'name',
        'eth2',
        'address',
        '00:16:3e:00:00:04',
        'mtu',
        '1400',
        'netns',
        '7',
        'type',
        'macvlan',
        'mode',
        'bridge',
      ],
    ],
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 'eth2', 'up']],
  ]);
  assert.deepEqual(physicalAttachCommands(7, { ...nic, hwaddr: '', mtu: undefined }), [
    ['ip', ['link', 'set', 'dev', 't17a1', 'down']],
    ['ip', ['link', 'set', 'dev', 't17a1', 'netns', '7']],
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 't17a1', 'name', 'eth2']],
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 'eth2', 'up']],
  ]);
  assert.deepEqual(physicalDetachCommands(7, nic, 99), [
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 'eth2', 'down']],
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 'eth2', 'name', 't17a1']],
    ['nsenter', ['-t', '7', '-n', 'ip', 'link', 'set', 'dev', 't17a1', 'netns', '99']],
  ]);
  // With what it had before it was moved in: its MAC and MTU put back with its name.
  assert.deepEqual(physicalDetachCommands(7, nic, 99, { hwaddr: '52:54:00:00:00:01', mtu: 9000 })[1], [
    'nsenter',
    [
      '-t',
      '7',
      '-n',
      'ip',
      'link',
      'set',
      'dev',
      'eth2',
      'name',
      't17a1',
      'address',
      '52:54:00:00:00:01',
      'mtu',
      '9000',
    ],
  ]);
});

test('nic limits: htb on the veth for ingress, an ifb of its own with htb for egress; cleared first', () => {
  const ifb = nicIfbOf('veth1');
  assert.match(ifb, /^ifb[0-9a-f]{8}$/);
  assert.deepEqual(nicLimitsCommands('veth1', { ingressBits: 10_000_000, egressBits: 1_000_000 }), [
    ['tc', 'qdisc', 'add', 'dev', 'veth1', 'root', 'handle', '1:', 'htb', 'default', '10'],
    ['tc', 'class', 'add', 'dev', 'veth1', 'parent', '1:', 'classid', '1:10', 'htb', 'rate', '10000000bit'],
    ['ip', 'link', 'add', ifb, 'type', 'ifb'],
    ['ip', 'link', 'set', ifb, 'up'],
    ['tc', 'qdisc', 'add', 'dev', ifb, 'root', 'handle', '1:', 'htb', 'default', '10'],
    ['tc', 'class', 'add', 'dev', ifb, 'parent', '1:', 'classid', '1:10', 'htb', 'rate', '1000000bit'],
    ['tc', 'qdisc', 'add', 'dev', 'veth1', 'handle', 'ffff:', 'ingress'],
    [
      'tc',
      'filter',
      'add',
      'dev',
      'veth1',
      'parent',
      'ffff:',
      'protocol',
      'all',
      'u32',
      'match',
      'u32',
      '0',
      '0',
      'action',
      'mirred',
      'egress',
      'redirect',
      'dev',
      ifb,
    ],
  ]);
  assert.deepEqual(nicLimitsCommands('veth1', {}), []);
  assert.deepEqual(clearNicLimitsCommands('veth1'), [
    ['tc', 'qdisc', 'del', 'dev', 'veth1', 'root'],
    ['tc', 'qdisc', 'del', 'dev', 'veth1', 'ingress'],
    ['ip', 'link', 'del', ifb],
  ]);
  // What cannot be there is not cleared: a fresh (or gone) veth has no qdisc, an absent ifb needs no del.
  assert.deepEqual(clearNicLimitsCommands('veth1', { qdiscs: false, ifb: true }), [['ip', 'link', 'del', ifb]]);
  assert.deepEqual(clearNicLimitsCommands('veth1', { qdiscs: false, ifb: false }), []);
});

test('mac filtering: one chain per nic in bridge svcd, dispatched by input interface; removal is idempotent', () => {
  assert.equal(nicFilterChain('v@x'), 'nic-v_x');
  assert.equal(
    renderNicFilter({ hostName: 'veth1', hwaddr: '00:16:3E:00:00:01', ipv4: '10.1.0.5', ipv6: 'fd00::5' }),
    `add table bridge svcd
add map bridge svcd nics { type ifname : verdict ; }
add chain bridge svcd prerouting { type filter hook prerouting priority -200 ; policy accept ; }
flush chain bridge svcd prerouting
add rule bridge svcd prerouting iifname vmap @nics
add chain bridge svcd nic-veth1
flush chain bridge svcd nic-veth1
add rule bridge svcd nic-veth1 ether saddr != 00:16:3e:00:00:01 drop
add rule bridge svcd nic-veth1 ether type arp arp saddr ether != 00:16:3e:00:00:01 drop
add rule bridge svcd nic-veth1 ether type arp arp saddr ip != 10.1.0.5 drop
add rule bridge svcd nic-veth1 ether type ip ip saddr != { 0.0.0.0, 10.1.0.5 } drop
add rule bridge svcd nic-veth1 ether type ip6 ip6 saddr != { ::, fe80::/10, fd00::5 } drop
add element bridge svcd nics { "veth1" : jump nic-veth1 }
`,
  );
  assert.equal(
    renderNicFilterRemoval('veth1'),
    `add table bridge svcd
add map bridge svcd nics { type ifname : verdict ; }
add chain bridge svcd nic-veth1
add element bridge svcd nics { "veth1" : jump nic-veth1 }
delete element bridge svcd nics { "veth1" }
delete chain bridge svcd nic-veth1
`,
  );
});
