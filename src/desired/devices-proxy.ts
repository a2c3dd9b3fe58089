/**
 * `proxy` devices (pure): their keys, the address syntax of `listen`/`connect` (tcp:, udp:, unix:, with
 * port ranges and lists), and the checks of one device on its own. What needs other objects (nat's
 * container address, a listen address another proxy or the host already uses) is in proxy-checks.ts.
 */
import { isBool, isUint, oneOf, type ValueCheck } from './config-keys.ts';
import { ValidationError } from './errors.ts';
import { parseIp, type Family } from '../util/ip-cidr.ts';
import { parseBool } from '../util/parse-bool.ts';

export type ProxyAddress =
  | { kind: 'tcp' | 'udp'; host: string; family: Family; ports: number[] }
  | { kind: 'unix'; path: string; abstract: boolean };

/** At most this many ports on one side (LXD's own limit is about the same order). */
const MAX_PORTS = 1024;

function parsePorts(text: string): number[] | string {
  const ports: number[] = [];
  for (const part of text.split(',')) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(part.trim());
    if (!m) return `bad port "${part}" (a port, a range such as 8000-8010, or a comma-separated list of them)`;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (lo < 1 || hi > 65535 || hi < lo) return `bad port range "${part}" (ports are 1 to 65535, low to high)`;
    if (ports.length + hi - lo + 1 > MAX_PORTS) return `too many ports (at most ${MAX_PORTS})`;
    for (let p = lo; p <= hi; p++) ports.push(p);
  }
  return ports;
}

/** Parse a proxy address, or return why it is not one. */
export function parseProxyAddress(text: string): ProxyAddress | string {
  const m = /^(tcp|udp|unix):(.*)$/s.exec(text);
  if (!m) return 'must start with tcp:, udp: or unix:';
  const rest = m[2]!;
  if (m[1] === 'unix') {
    if (/[\0\n\r]/.test(rest)) return 'must not contain NUL or line breaks';
    if (rest.startsWith('@'))
      return rest.length > 1 && rest.length <= 107
        ? { kind: 'unix', path: rest.slice(1), abstract: true }
        : 'an abstract unix name must be 1 to 106 characters after "@"';
    if (!rest.startsWith('/') || rest.split('/').includes('..'))
      return 'a unix socket path must be absolute, without ".."';
    if (rest.length > 107) return 'a unix socket path must be at most 107 characters';
    return { kind: 'unix', path: rest, abstract: false };
  }
  const hp = /^(?:\[([^\]]+)\]|([^:[\]]+)):([^:]+)$/.exec(rest);
  if (!hp) return `must be ${m[1]}:<address>:<ports> (IPv6 in brackets: [::1]:80)`;
  const host = hp[1] ?? hp[2]!;
  const ip = parseIp(host);
  if (!ip || (hp[1] !== undefined && ip.family !== 6) || (hp[2] !== undefined && ip.family !== 4))
    return `bad address "${host}" (an IPv4 address, or an IPv6 address in brackets)`;
  const ports = parsePorts(hp[3]!);
  if (typeof ports === 'string') return ports;
  return { kind: m[1] as 'tcp' | 'udp', host, family: ip.family, ports };
}

/** 0.0.0.0 or :: (every address). */
export const isWildcard = (a: ProxyAddress) => a.kind !== 'unix' && parseIp(a.host)!.value === 0n;
/** 127.0.0.0/8 or ::1. */
export const isLoopback = (a: ProxyAddress) =>
  a.kind !== 'unix' && (a.family === 4 ? a.host.startsWith('127.') : parseIp(a.host)!.value === 1n);

const address: ValueCheck = (v) => {
  const a = parseProxyAddress(v);
  return typeof a === 'string' ? a : undefined;
};

export const PROXY_KEYS: Record<string, ValueCheck> = {
  listen: address,
  connect: address,
  bind: oneOf('host', 'container'),
  uid: isUint,
  gid: isUint,
  mode: (v) => (/^0?[0-7]{3}$/.test(v) ? undefined : 'must be an octal permission mode such as 0660'),
  'security.uid': isUint,
  'security.gid': isUint,
  proxy_protocol: isBool,
  nat: isBool,
};

export const isTrue = (v: string | undefined) => parseBool(v);

/** The parsed sides of a proxy device that passed checkProxy. */
export function proxySides(dev: Record<string, string>): { listen: ProxyAddress; connect: ProxyAddress } {
  return {
    listen: parseProxyAddress(dev.listen!) as ProxyAddress,
    connect: parseProxyAddress(dev.connect!) as ProxyAddress,
  };
}

/** The checks of one proxy device on its own (its keys' values are already checked by PROXY_KEYS). */
export function checkProxy(name: string, dev: Record<string, string>): void {
  const where = `Device "${name}" (proxy)`;
  for (const k of ['listen', 'connect']) if (!dev[k]) throw new ValidationError(`${where}: "${k}" is required`);
  const { listen, connect } = proxySides(dev);
  for (const k of ['uid', 'gid', 'mode'])
    if (dev[k] !== undefined && (listen.kind !== 'unix' || listen.abstract))
      throw new ValidationError(`${where}: "${k}" applies only to a unix listen socket with a path`);
  if ((listen.kind === 'udp') !== (connect.kind === 'udp'))
    throw new ValidationError(
      `${where}: "connect": a ${listen.kind} listen address cannot be proxied to ${connect.kind} (udp only to udp)`,
    );
  const listenPorts = listen.kind === 'unix' ? 1 : listen.ports.length;
  if (connect.kind !== 'unix' && connect.ports.length !== 1 && connect.ports.length !== listenPorts)
    throw new ValidationError(
      `${where}: "connect" has ${connect.ports.length} ports and "listen" ${listenPorts}: they must match one to one, or "connect" must name a single port`,
    );
  if (!isTrue(dev.nat)) return;
  if (listen.kind === 'unix' || connect.kind === 'unix')
    throw new ValidationError(`${where}: "nat" cannot forward unix sockets (tcp or udp only)`);
  if (listen.kind !== connect.kind) throw new ValidationError(`${where}: "nat" needs the same protocol on both sides`);
  if (listen.family !== connect.family)
    throw new ValidationError(`${where}: "nat" needs the same address family on both sides`);
  if (isWildcard(listen))
    throw new ValidationError(
      `${where}: "nat" cannot listen on a wildcard address (${listen.host}): give the host address to forward`,
    );
  if (listen.family === 6 && isLoopback(listen))
    throw new ValidationError(`${where}: "nat" cannot forward from ::1 (IPv6 has no route_localnet)`);
  if ((dev.bind ?? 'host') !== 'host') throw new ValidationError(`${where}: "nat" works only with bind=host`);
  if (isTrue(dev.proxy_protocol))
    throw new ValidationError(
      `${where}: "proxy_protocol" cannot be used with "nat" (no userspace hop adds the header)`,
    );
  for (const k of ['security.uid', 'security.gid'])
    if (dev[k] !== undefined) throw new ValidationError(`${where}: "${k}" has no process to apply to with "nat"`);
}
