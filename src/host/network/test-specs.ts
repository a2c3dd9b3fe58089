/** NetworkSpecs for the host side's golden and integration tests. */
import type { NetworkFamilySpec, NetworkSpec } from './types.ts';

export function familySpec(
  address: string,
  prefix: number,
  subnet: string,
  over: Partial<NetworkFamilySpec> = {},
): NetworkFamilySpec {
  return {
    address,
    prefix,
    subnet,
    dhcp: true,
    dhcpRanges: [],
    dhcpExpiry: '1h',
    nat: false,
    natOrder: 'before',
    routing: false,
    firewall: true,
    routes: [],
    ...over,
  };
}

/** A bridge `name` in `dir` on 10.55.12.1/24, no IPv6, DNS managed under `svcd`. */
export function networkSpec(name: string, dir: string, over: Partial<NetworkSpec> = {}): NetworkSpec {
  return {
    name,
    dir,
    driver: 'native',
    mtu: 1500,
    hwaddr: '00:16:3e:12:34:56',
    externalInterfaces: [],
    ipv4: familySpec('10.55.12.1', 24, '10.55.12.0/24'),
    dns: { domain: 'svcd', mode: 'managed' },
    rawDnsmasq: '',
    tunnels: [],
    ...over,
  };
}
