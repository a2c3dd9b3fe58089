/**
 * Whether a proxy's host listen address is free, for the 400 at a desired write (no process spawned).
 * A few ports: each is bound for a moment (tcp: listen, exclusive, closed at once; udp: bind), which costs
 * microseconds and answers exactly what the forwarder's bind will meet, including an address no
 * interface of the host has. Many ports (a range): one read of /proc/net/{tcp,tcp6,udp,udp6} (tcp in
 * LISTEN, udp unconnected), which walks the kernel's whole socket hash tables: ~5 ms a file on a host with
 * this much memory however few sockets exist, hence the probes. The parser is pure (golden-tested).
 */
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { formatIp, parseIp } from '../../util/ip-cidr.ts';
import type { ListenConflict, ListenQuery } from '../../desired/proxy-checks.ts';

const TCP_LISTEN = '0A';
const UDP_UNCONNECTED = '07';
/** At most this many ports are probed by binding them; beyond, /proc/net is read once. */
export const MAX_BIND_PROBES = 32;

export interface BoundSocket {
  protocol: 'tcp' | 'udp';
  address: string;
  port: number;
}

/** A /proc/net address (hex, each 32-bit word in host byte order: little-endian here) as text; v4-mapped IPv6 as IPv4. */
function decodeAddress(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((w) => (w.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  if (bytes.length === 4) return bytes.join('.');
  const isMapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (isMapped) return bytes.slice(12).join('.');
  return formatIp(
    6,
    bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n),
  );
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
  const files = [
    ['tcp', 'tcp'],
    ['tcp6', 'tcp'],
    ['udp', 'udp'],
    ['udp6', 'udp'],
  ] as const;
  const texts = await Promise.all(files.map(([f]) => readFile(`${procRoot}/net/${f}`, 'utf8').catch(() => '')));
  return files.flatMap(([, p], i) => parseProcNet(texts[i]!, p));
}

/** The first of `sockets` that a listen on `q` would meet (same protocol and port; same address, or a wildcard on either side). Pure. */
export function conflictIn(sockets: readonly BoundSocket[], q: ListenQuery): ListenConflict | undefined {
  const ip = parseIp(q.host);
  const hit = sockets.find((s) => {
    if (s.protocol !== q.protocol || !q.ports.includes(s.port)) return false;
    const other = parseIp(s.address);
    return q.wildcard || other?.value === 0n || (other?.family === ip?.family && other?.value === ip?.value);
  });
  return hit && { port: hit.port, why: 'in use' };
}

/** Bind `port` of `q` for a moment: undefined when it could be, else the errno code. */
function tryBind(q: ListenQuery, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const done = (e?: NodeJS.ErrnoException) => resolve(e ? (e.code ?? 'EINVAL') : undefined);
    if (q.protocol === 'udp') {
      const s = dgram.createSocket(q.family === 6 ? 'udp6' : 'udp4');
      s.once('error', (e) => (s.close(), done(e)));
      s.bind({ address: q.host, port, exclusive: true }, () => s.close(() => done()));
      return;
    }
    const srv = net.createServer();
    srv.once('error', done);
    srv.listen({ host: q.host, port, exclusive: true, backlog: 1 }, () => srv.close(() => done()));
  });
}

/** The host's ListenProbe (agent.ts gives it to the API). */
export async function probeListen(q: ListenQuery): Promise<ListenConflict | undefined> {
  if (q.ports.length > MAX_BIND_PROBES) return conflictIn(await readBoundSockets(), q);
  for (const port of q.ports) {
    const code = await tryBind(q, port);
    if (code === 'EADDRINUSE') return { port, why: 'in use' };
    if (code === 'EADDRNOTAVAIL') return { port, why: 'not a local address' };
  }
  return undefined;
}
