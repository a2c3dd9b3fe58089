/**
 * The sockets bound on the host (svcd's network namespace), from /proc/net/{tcp,tcp6,udp,udp6}: tcp in
 * LISTEN, udp unconnected. File reads only, no process. The parser is pure (golden-tested).
 */
import { readFile } from 'node:fs/promises';
import { formatIp } from '../../util/ip-cidr.ts';
import type { BoundSocket } from '../../desired/proxy-checks.ts';

const TCP_LISTEN = '0A';
const UDP_UNCONNECTED = '07';

/** A /proc/net address (hex, each 32-bit word in host byte order: little-endian here) as text; v4-mapped IPv6 as IPv4. */
function decodeAddress(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((w) => (w.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  if (bytes.length === 4) return bytes.join('.');
  const isMapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (isMapped) return bytes.slice(12).join('.');
  return formatIp(6, bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n));
}

/** Parse one /proc/net/{tcp,udp}{,6} file. */
export function parseProcNet(text: string, protocol: 'tcp' | 'udp'): BoundSocket[] {
  const out: BoundSocket[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const [local, , state] = [f[1]!, f[2]!, f[3]!];
    if (state !== (protocol === 'tcp' ? TCP_LISTEN : UDP_UNCONNECTED)) continue;
    const [addr, port] = local.split(':');
    if (!addr || !port) continue;
    out.push({ protocol, address: decodeAddress(addr), port: parseInt(port, 16) });
  }
  return out;
}

/** Every bound tcp (listening) and udp socket of the host. */
export async function readBoundSockets(procRoot = '/proc'): Promise<BoundSocket[]> {
  const files = [['tcp', 'tcp'], ['tcp6', 'tcp'], ['udp', 'udp'], ['udp6', 'udp']] as const;
  const texts = await Promise.all(files.map(([f]) => readFile(`${procRoot}/net/${f}`, 'utf8').catch(() => '')));
  return files.flatMap(([, p], i) => parseProcNet(texts[i]!, p));
}
