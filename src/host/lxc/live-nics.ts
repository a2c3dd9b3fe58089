/**
 * A running container's nics, attached and detached live: a veth pair whose peer is created inside the
 * container's network namespace (by its init's pid) with the nic's name, MAC and MTU, whose host side
 * joins the bridge. Plus the nic's host routes (`ipv4.routes`/`ipv6.routes` via its static address).
 * Pure argv builders and their runners (argv via host/exec.ts); the host side is read from /sys.
 */
import { access, readdir, readFile, readlink } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import path from 'node:path';
import { HostCommandError, runCommand } from '../exec.ts';

export interface LiveNic {
  /** Host-side veth. */
  hostName: string;
  /** Name inside the container. */
  name: string;
  /** The bridge the host side joins ('' for none: p2p). */
  parent: string;
  hwaddr: string;
  mtu?: number | undefined;
}

const mtuArgs = (mtu: number | undefined) => (mtu !== undefined ? ['mtu', String(mtu)] : []);

/** The commands that attach a nic to the container whose init is `pid`: [file, argv] in order. */
export function attachNicCommands(pid: number, nic: LiveNic): [string, string[]][] {
  return [
    [
      'ip',
      [
        'link',
        'add',
        nic.hostName,
        ...mtuArgs(nic.mtu),
        'type',
        'veth',
        'peer',
        'name',
        nic.name,
        'address',
        nic.hwaddr,
        ...mtuArgs(nic.mtu),
        'netns',
        String(pid),
      ],
    ],
    // A p2p nic (no bridge): its host side is left alone, up.
    [
      'ip',
      nic.parent ? ['link', 'set', nic.hostName, 'master', nic.parent, 'up'] : ['link', 'set', nic.hostName, 'up'],
    ],
    ['nsenter', ['-t', String(pid), '-n', 'ip', 'link', 'set', nic.name, 'up']],
  ];
}

/** The host side joins its bridge again (after the bridge was recreated), up. */
export const rejoinBridgeArgs = (nic: Pick<LiveNic, 'hostName' | 'parent'>) => [
  'link',
  'set',
  nic.hostName,
  'master',
  nic.parent,
  'up',
];

/** Deleting the host side deletes the pair (the peer inside goes with it). */
export const detachNicArgs = (hostName: string) => ['link', 'del', hostName];

const gone = (e: unknown) =>
  e instanceof HostCommandError && /Cannot find device|does not exist|No such device/i.test(e.stderr);

export async function attachNic(pid: number, nic: LiveNic, signal?: AbortSignal): Promise<void> {
  // A host side left from an earlier try would make `link add` fail: it goes first.
  await detachNic(nic.hostName, signal);
  try {
    for (const [file, args] of attachNicCommands(pid, nic))
      await runCommand(file, args, { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
  } catch (e) {
    await detachNic(nic.hostName).catch(() => undefined);
    throw e;
  }
}

/** Detach a nic; nothing there is success. */
export async function detachNic(hostName: string, signal?: AbortSignal): Promise<void> {
  await runCommand('ip', detachNicArgs(hostName), { timeoutMs: 30_000, ...(signal ? { signal } : {}) }).catch(
    (e: unknown) => {
      if (!gone(e)) throw e;
    },
  );
}

export async function rejoinBridge(nic: Pick<LiveNic, 'hostName' | 'parent'>, signal?: AbortSignal): Promise<void> {
  await runCommand('ip', rejoinBridgeArgs(nic), { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
}

/** A host-side veth as /sys shows it: absent (undefined), or present with the bridge it is enslaved to ('' for none). */
export async function readHostVeth(
  hostName: string,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<{ master: string } | undefined> {
  const dir = path.join(sysRoot, 'class/net', hostName);
  if (
    !(await access(dir).then(
      () => true,
      () => false,
    ))
  )
    return undefined;
  const master = await readlink(path.join(dir, 'master')).then(
    (l) => path.basename(l),
    () => '',
  );
  return { master };
}

/** The renames that give a host-side veth its stable name (a link is renamed only while down). */
export const renameHostVethArgs = (from: string, to: string): string[][] => [
  ['link', 'set', 'dev', from, 'down'],
  ['link', 'set', 'dev', from, 'name', to],
  ['link', 'set', 'dev', to, 'up'],
];

/** `ip -j -d link show dev <name>` output → the veth's own and peer ifindex, MAC and MTU; undefined unless a veth. */
export function parseContainerVeth(
  json: string,
): { ifindex: number; peerIndex: number; hwaddr: string; mtu: number } | undefined {
  const [l] = JSON.parse(json || '[]') as {
    ifindex?: number;
    link_index?: number;
    address?: string;
    mtu?: number;
    linkinfo?: { info_kind?: string };
  }[];
  if (l?.linkinfo?.info_kind !== 'veth' || typeof l.ifindex !== 'number' || typeof l.link_index !== 'number')
    return undefined;
  return { ifindex: l.ifindex, peerIndex: l.link_index, hwaddr: (l.address ?? '').toLowerCase(), mtu: l.mtu ?? 0 };
}

/**
 * Adopt a nic a running container already has under another host-side name (LXC's own `vethXXXXXX`,
 * from an svcd before stable names): its interface `nic.name` (read in its network namespace), when a
 * veth, and the host-side peer (found in /sys by ifindex and iflink) renamed to `nic.hostName`. Returns
 * the MAC and MTU it has, or undefined when the container has no such veth whose peer is on this host.
 */
export async function adoptNic(
  pid: number,
  nic: Pick<LiveNic, 'hostName' | 'name'>,
  signal?: AbortSignal,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<{ hwaddr: string; mtu: number } | undefined> {
  const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
  const json = await runCommand(
    'nsenter',
    ['-t', String(pid), '-n', 'ip', '-j', '-d', 'link', 'show', 'dev', nic.name],
    opts,
  ).catch((e: unknown) => {
    if (gone(e)) return '';
    throw e;
  });
  const inside = parseContainerVeth(json);
  if (!inside) return undefined;
  const netDir = path.join(sysRoot, 'class/net');
  const num = (name: string, file: string) =>
    readFile(path.join(netDir, name, file), 'utf8').then(
      (s) => Number(s.trim()),
      () => NaN,
    );
  let host: string | undefined;
  for (const name of await readdir(netDir).catch(() => [] as string[]))
    if ((await num(name, 'ifindex')) === inside.peerIndex && (await num(name, 'iflink')) === inside.ifindex) {
      host = name;
      break;
    }
  if (host === undefined) return undefined;
  if (host !== nic.hostName)
    for (const args of renameHostVethArgs(host, nic.hostName)) await runCommand('ip', args, opts);
  return { hwaddr: inside.hwaddr, mtu: inside.mtu };
}

/**
 * `ip route replace|del <cidr> via <address> dev <bridge>` for each of a nic's routes (family from the
 * address; none without one), or with no `via` at all (a p2p nic) `dev <its host side>`.
 */
export function nicRouteArgs(
  verb: 'replace' | 'del',
  routes: readonly string[],
  via: { ipv4?: string | undefined; ipv6?: string | undefined } | undefined,
  bridge: string,
): string[][] {
  const out: string[][] = [];
  for (const r of routes) {
    const v6 = isIPv6(r.split('/')[0]!);
    const gw = v6 ? via?.ipv6 : via?.ipv4;
    if (!via) out.push([v6 ? '-6' : '-4', 'route', verb, r, 'dev', bridge]);
    else if (gw) out.push([v6 ? '-6' : '-4', 'route', verb, r, 'via', gw, 'dev', bridge]);
  }
  return out;
}

/** Set (replace) or remove (del: absent is success) a nic's host routes. */
export async function applyNicRoutes(
  verb: 'replace' | 'del',
  routes: readonly string[],
  via: { ipv4?: string | undefined; ipv6?: string | undefined } | undefined,
  bridge: string,
  signal?: AbortSignal,
): Promise<void> {
  for (const args of nicRouteArgs(verb, routes, via, bridge)) {
    await runCommand('ip', args, { timeoutMs: 30_000, ...(signal ? { signal } : {}) }).catch((e: unknown) => {
      if (
        verb === 'replace' ||
        !(e instanceof HostCommandError && /No such process|Cannot find device|not found/i.test(e.stderr))
      )
        throw e;
    });
  }
}
