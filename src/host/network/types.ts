/**
 * The shapes shared by managed networks' three sides: the reconciler derives a NetworkSpec
 * from a network's desired config (reconcilers/network/network-spec.ts); the host side
 * (src/host/network/) converges the host to it; the API reads host interfaces, their state and the
 * leases through NetworkHost (api/host-service.ts). Pure types: no behaviour here.
 */

/** One IPv4 or IPv6 side of a bridge, already resolved (no `auto`: the API stored the picked subnet). */
export interface NetworkFamilySpec {
  /** The bridge's own address (the gateway), e.g. `10.55.12.1`. */
  address: string;
  /** Prefix length of the subnet (`24`). */
  prefix: number;
  /** The subnet in CIDR form, e.g. `10.55.12.0/24` (derived from address and prefix). */
  subnet: string;
  /** Serve DHCP (`ipv4.dhcp`, default true). For IPv6: router advertisements and DHCPv6 (`ipv6.dhcp`). */
  dhcp: boolean;
  /** IPv6 only: stateful DHCPv6 (`ipv6.dhcp.stateful`); otherwise SLAAC with stateless DHCPv6. */
  dhcpStateful?: boolean;
  /** DHCP ranges (`ipv4.dhcp.ranges`, `start-end` pairs); empty: the whole subnet but the gateway. */
  dhcpRanges: { start: string; end: string }[];
  /** Lease time (`ipv4.dhcp.expiry`, dnsmasq syntax: `1h`, `30m`, `infinite`); default `1h`. */
  dhcpExpiry: string;
  /** IPv4 only: the gateway DHCP announces (`ipv4.dhcp.gateway`); default the bridge address. */
  dhcpGateway?: string;
  /** Masquerade traffic from the subnet leaving through another interface (`ipv4.nat`). */
  nat: boolean;
  /** `before` or `after` (`ipv4.nat.order`): where svcd's NAT rule goes relative to others. */
  natOrder: 'before' | 'after';
  /** Source address for NAT (`ipv4.nat.address`); default masquerade. */
  natAddress?: string;
  /** Enable forwarding for this family on the host (`ipv4.routing`, default true). */
  routing: boolean;
  /** Generate the accept rules for DHCP, DNS and forwarding (`ipv4.firewall`, default true). */
  firewall: boolean;
  /** Extra subnets routed to the bridge (`ipv4.routes`, CIDRs). */
  routes: string[];
}

export interface TunnelSpec {
  /** The NAME of `tunnel.NAME.*`; the host interface is `<network>-<NAME>` (at most 15 characters). */
  name: string;
  protocol: 'gre' | 'vxlan';
  local?: string;
  remote?: string;
  /** vxlan: UDP port (default 4789 on the host's side, LXD's default 0 = kernel default). */
  port?: number;
  /** vxlan: multicast group (when no remote). */
  group?: string;
  /** vxlan: VNI (default 0). */
  id?: number;
  /** vxlan: the interface for multicast. */
  interface?: string;
  ttl?: number;
}

/** Everything the host needs to converge one managed bridge. */
export interface NetworkSpec {
  /** The network's name = the bridge's interface name on the host (at most 15 characters). */
  name: string;
  /** svcd's directory for this network (host/layout.ts networkDirOf): dnsmasq's config, pid, leases, hosts dir. */
  dir: string;
  driver: 'native' | 'openvswitch';
  /** `bridge.mtu`; default 1500. */
  mtu: number;
  /** `bridge.hwaddress`; default a stable address derived from the network's id (00:16:3e prefix). */
  hwaddr: string;
  /** `bridge.external_interfaces`: host interfaces enslaved to the bridge. */
  externalInterfaces: string[];
  ipv4?: NetworkFamilySpec;
  ipv6?: NetworkFamilySpec;
  dns: {
    /** `dns.domain`, default `svcd`. */
    domain: string;
    /** `dns.mode`: managed (names of containers from their DHCP host entries), dynamic (names clients send), none (no DNS). */
    mode: 'managed' | 'dynamic' | 'none';
  };
  /** `raw.dnsmasq`: appended to the generated dnsmasq config. */
  rawDnsmasq: string;
  tunnels: TunnelSpec[];
}

/**
 * One container nic's DHCP host entry (a dnsmasq `dhcp-hostsdir` file): the name DNS answers for,
 * and a static address when the nic has `ipv4.address` / `ipv6.address`.
 */
export interface DhcpHostEntry {
  hwaddr: string;
  /** The container's name (DNS: `<name>.<dns.domain>`). */
  hostname: string;
  ipv4?: string;
  ipv6?: string;
}

/** A lease as GET /1.0/networks/<name>/leases renders it (LXD's shape). */
export interface NetworkLease {
  hostname: string;
  hwaddr: string;
  address: string;
  type: 'static' | 'dynamic';
  location: string;
}

/** A host interface as the network list shows it (managed: false unless svcd manages it). */
export interface HostInterface {
  name: string;
  /** `bridge`, `physical`, `loopback`, `bond`, `vlan`, `unknown` (LXD's words). */
  type: string;
}

/** GET /1.0/networks/<name>/state (spec: Network state). */
export interface NetworkStateView {
  addresses: { family: 'inet' | 'inet6'; address: string; netmask: string; scope: 'global' | 'link' | 'local' }[];
  counters: { bytes_received: number; bytes_sent: number; packets_received: number; packets_sent: number };
  hwaddr: string;
  mtu: number;
  /** `up` or `down`. */
  state: string;
  /** `broadcast`, `loopback`, `point-to-point`. */
  type: string;
}

/** A host feature a network key needs, probed on this host. */
export type NetworkFeature = 'openvswitch' | 'gre' | 'vxlan' | 'fan' | 'vlan' | 'maas';
