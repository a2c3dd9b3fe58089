/**
 * argv for `ip` (pure): the bridge, its settings and addresses, enslaved interfaces, routes through it,
 * and its tunnels (`<network>-<tunnel>`: vxlan, or gretap — a layer-2 GRE tunnel a bridge can enslave).
 */
import type { NetworkSpec, TunnelSpec } from './types.ts';

export const bridgeAddArgs = (name: string) => ['link', 'add', 'dev', name, 'type', 'bridge'];

export const linkDeleteArgs = (name: string) => ['link', 'delete', 'dev', name];

/** The bridge's MAC address and MTU, and up. */
export const bridgeSetArgs = (spec: Pick<NetworkSpec, 'name' | 'hwaddr' | 'mtu'>) => [
  'link',
  'set',
  'dev',
  spec.name,
  'address',
  spec.hwaddr,
  'mtu',
  String(spec.mtu),
  'up',
];

/** `ip addr replace`: the address is there afterwards whatever was before (CIDR form, `10.0.0.1/24`). */
export const addressReplaceArgs = (name: string, cidr: string) => [
  cidr.includes(':') ? '-6' : '-4',
  'addr',
  'replace',
  cidr,
  'dev',
  name,
];

export const addressDeleteArgs = (name: string, cidr: string) => [
  cidr.includes(':') ? '-6' : '-4',
  'addr',
  'delete',
  cidr,
  'dev',
  name,
];

/** A route to `cidr` through the bridge (`ipv4.routes`, `ipv6.routes`); `proto static` marks svcd's. */
export const routeReplaceArgs = (name: string, cidr: string) => [
  cidr.includes(':') ? '-6' : '-4',
  'route',
  'replace',
  cidr,
  'dev',
  name,
  'proto',
  'static',
];

export const routeDeleteArgs = (name: string, cidr: string) => [
  cidr.includes(':') ? '-6' : '-4',
  'route',
  'delete',
  cidr,
  'dev',
  name,
];

/** Put an interface (external or a tunnel) into the bridge and bring it up. */
export const enslaveArgs = (iface: string, bridge: string) => ['link', 'set', 'dev', iface, 'master', bridge, 'up'];

/** The host interface of a tunnel. */
export const tunnelInterfaceName = (network: string, tunnel: string) => `${network}-${tunnel}`;

/** The default vxlan multicast group when neither remote nor group is set (LXD's). */
export const VXLAN_DEFAULT_GROUP = '239.0.0.1';

/**
 * `ip link add` of one tunnel. A multicast vxlan needs a device: `tunnel.interface`, else `defaultDev`
 * (the adapter passes the interface of the default route).
 */
export function tunnelAddArgs(network: string, t: TunnelSpec, defaultDev?: string): string[] {
  const name = tunnelInterfaceName(network, t.name);
  const ttl = ['ttl', String(t.ttl ?? (t.protocol === 'vxlan' ? 1 : 64))];
  if (t.protocol === 'gre') {
    return [
      'link',
      'add',
      'dev',
      name,
      'type',
      'gretap',
      ...(t.local ? ['local', t.local] : []),
      ...(t.remote ? ['remote', t.remote] : []),
      ...ttl,
    ];
  }
  const out = ['link', 'add', 'dev', name, 'type', 'vxlan', 'id', String(t.id ?? 0), 'dstport', String(t.port ?? 4789)];
  if (t.remote) {
    if (t.local) out.push('local', t.local);
    out.push('remote', t.remote);
    if (t.interface) out.push('dev', t.interface);
  } else {
    out.push('group', t.group ?? VXLAN_DEFAULT_GROUP);
    const dev = t.interface ?? defaultDev;
    if (dev) out.push('dev', dev);
  }
  return [...out, ...ttl];
}
