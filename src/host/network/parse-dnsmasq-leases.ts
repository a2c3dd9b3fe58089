/**
 * dnsmasq's lease file (`dhcp-leasefile`) → the dynamic leases of GET /1.0/networks/<name>/leases.
 * IPv4 lines: `expiry mac ip hostname clientid`. After the `duid <server duid>` line come IPv6 lines:
 * `expiry iaid ip hostname client-duid`; their hwaddr is the client DUID's link-layer tail (DUID-LL
 * and DUID-LLT end with the MAC), as LXD shows it. A `*` hostname is no name.
 */
import type { NetworkLease } from './types.ts';

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

export function parseDnsmasqLeases(text: string): NetworkLease[] {
  const out: NetworkLease[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'duid' || f.length < 4 || !/^\d+$/.test(f[0]!)) continue;
    const [, id, address, name, client = ''] = f as [string, string, string, string, string?];
    const hostname = name === '*' ? '' : name;
    if (address.includes(':')) {
      const tail = client.slice(-17);
      out.push({
        hostname,
        hwaddr: MAC.test(tail) ? tail.toLowerCase() : '',
        address,
        type: 'dynamic',
        location: 'none',
      });
    } else if (MAC.test(id)) {
      out.push({ hostname, hwaddr: id.toLowerCase(), address, type: 'dynamic', location: 'none' });
    }
  }
  return out;
}
