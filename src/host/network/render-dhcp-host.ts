/** One DHCP host entry → its dnsmasq `dhcp-hostsdir` line (pure): `mac,[ipv4,][[ipv6],]hostname`. */
import type { DhcpHostEntry } from './types.ts';

export function renderDhcpHost(e: DhcpHostEntry): string {
  const fields = [e.hwaddr.toLowerCase(), ...(e.ipv4 ? [e.ipv4] : []), ...(e.ipv6 ? [`[${e.ipv6}]`] : []), e.hostname];
  return `${fields.join(',')}\n`;
}
