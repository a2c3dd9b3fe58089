import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runCommand } from '../exec.ts';
import { renderNftRuleset } from './render-nft-ruleset.ts';
import { familySpec, networkSpec } from './test-specs.ts';

const EMPTY = 'table inet svcd {}\ndelete table inet svcd\n';

const FIREWALL_ONLY = `${EMPTY}table inet svcd {
  chain input {
    type filter hook input priority filter; policy accept;
    iifname "br0" meta nfproto ipv4 udp dport { 53, 67 } accept
    iifname "br0" meta nfproto ipv4 tcp dport 53 accept
    iifname "br0" meta nfproto ipv4 meta l4proto icmp accept
  }
  chain output {
    type filter hook output priority filter; policy accept;
    oifname "br0" meta nfproto ipv4 udp sport { 53, 67 } accept
    oifname "br0" meta nfproto ipv4 tcp sport 53 accept
    oifname "br0" meta nfproto ipv4 meta l4proto icmp accept
  }
  chain forward {
    type filter hook forward priority filter; policy accept;
    iifname "br0" meta nfproto ipv4 accept
    oifname "br0" meta nfproto ipv4 accept
  }
}
`;

const NAT_BOTH = `${EMPTY}table inet svcd {
  chain input {
    type filter hook input priority filter; policy accept;
    iifname "a1" meta nfproto ipv6 udp dport { 53, 547 } accept
    iifname "a1" meta nfproto ipv6 tcp dport 53 accept
    iifname "a1" meta nfproto ipv6 meta l4proto ipv6-icmp accept
  }
  chain output {
    type filter hook output priority filter; policy accept;
    oifname "a1" meta nfproto ipv6 udp sport { 53, 547 } accept
    oifname "a1" meta nfproto ipv6 tcp sport 53 accept
    oifname "a1" meta nfproto ipv6 meta l4proto ipv6-icmp accept
  }
  chain forward {
    type filter hook forward priority filter; policy accept;
    iifname "a1" meta nfproto ipv6 accept
    oifname "a1" meta nfproto ipv6 accept
  }
  chain postrouting_before {
    type nat hook postrouting priority srcnat - 1; policy accept;
    ip saddr 10.55.12.0/24 ip daddr != 10.55.12.0/24 masquerade
  }
  chain postrouting_after {
    type nat hook postrouting priority srcnat + 1; policy accept;
    ip6 saddr fd42:1::/64 ip6 daddr != fd42:1::/64 snat ip6 to fd42:ffff::1
  }
}
`;

const specs = {
  firewallOnly: [networkSpec('br0', '/s/br0')],
  natBoth: [
    networkSpec('b2', '/s/b2', { ipv4: familySpec('10.55.12.1', 24, '10.55.12.0/24', { nat: true, firewall: false }) }),
    networkSpec('a1', '/s/a1', {
      ipv4: undefined,
      ipv6: familySpec('fd42:1::1', 64, 'fd42:1::/64', { nat: true, natOrder: 'after', natAddress: 'fd42:ffff::1' }),
    }),
  ],
};

test('renderNftRuleset: no network only removes the table', () => {
  assert.equal(renderNftRuleset([]), EMPTY);
});

test('renderNftRuleset: bridges without addresses have no rule: the table is only removed', () => {
  const l2 = networkSpec('l2', '/s/l2', { ipv4: undefined });
  assert.equal(renderNftRuleset([l2]), EMPTY);
  // next to a bridge with an address, only that bridge's rules
  assert.equal(renderNftRuleset([l2, ...specs.firewallOnly]), FIREWALL_ONLY);
});

test('renderNftRuleset: the firewall accepts of one IPv4 bridge', () => {
  assert.equal(renderNftRuleset(specs.firewallOnly), FIREWALL_ONLY);
});

test('renderNftRuleset: NAT before and after, snat to an address, networks by name', () => {
  assert.equal(renderNftRuleset(specs.natBoth), NAT_BOTH);
});

describe('nft accepts each golden script (check mode, nothing applied)', {
  skip: process.getuid?.() !== 0 ? 'needs root' : false,
}, () => {
  for (const [name, script] of Object.entries({ EMPTY, FIREWALL_ONLY, NAT_BOTH })) {
    test(name, async () => {
      await runCommand('nft', ['-c', '-f', '-'], { input: script });
    });
  }
});
