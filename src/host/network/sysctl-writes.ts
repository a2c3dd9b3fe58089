/**
 * The sysctls a network needs (pure): paths under /proc/sys and their values. IPv4 forwarding is
 * host-wide (turned on when a network routes, never turned off: other networks or the admin may need
 * it); IPv6 is per bridge: off entirely without an IPv6 side, else no RA learning or autoconf on the
 * bridge (svcd sets its address), forwarding when it routes (then also host-wide).
 */
import type { NetworkSpec } from './types.ts';

export interface SysctlWrite {
  /** Relative to /proc/sys, e.g. `net/ipv4/ip_forward`. */
  path: string;
  value: string;
}

export function networkSysctls(spec: Pick<NetworkSpec, 'name' | 'ipv4' | 'ipv6'>): SysctlWrite[] {
  const out: SysctlWrite[] = [];
  const v6 = (key: string, value: string) => out.push({ path: `net/ipv6/conf/${spec.name}/${key}`, value });
  if (spec.ipv4?.routing) out.push({ path: 'net/ipv4/ip_forward', value: '1' });
  if (!spec.ipv6) {
    v6('disable_ipv6', '1');
    return out;
  }
  v6('disable_ipv6', '0');
  v6('accept_ra', '0');
  v6('autoconf', '0');
  v6('accept_dad', '0');
  if (spec.ipv6.routing) {
    v6('forwarding', '1');
    out.push({ path: 'net/ipv6/conf/all/forwarding', value: '1' });
  }
  return out;
}
