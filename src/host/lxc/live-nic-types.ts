/**
 * Live nics that are not veths: a macvlan made on its host parent straight into the container's network
 * namespace, and a host interface moved in (physical) and given back to the host under its own name.
 * Pure argv builders and their runners (argv via host/exec.ts); what the container has is read from
 * /proc/<pid>/net/dev (its network namespace), without spawning.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { HostCommandError, runCommand } from '../exec.ts';
import { parseNetDev } from './parse-proc-net.ts';

/** A macvlan or physical nic: `parent` the host interface, `name` its name inside. */
export interface InsideNic {
  name: string;
  parent: string;
  /** '' keeps the interface's own MAC (physical without `hwaddr`). */
  hwaddr: string;
  mtu?: number | undefined;
}

const inNs = (pid: number, ...args: string[]): [string, string[]] => [
  'nsenter',
  ['-t', String(pid), '-n', 'ip', ...args],
];
const addrMtu = (nic: InsideNic) => [
  ...(nic.hwaddr ? ['address', nic.hwaddr] : []),
  ...(nic.mtu !== undefined ? ['mtu', String(nic.mtu)] : []),
];

/** A macvlan (bridge mode) on `parent`, made in the network namespace of init `pid` as `name`, up. */
export function macvlanAttachCommands(pid: number, nic: InsideNic): [string, string[]][] {
  return [
    [
      'ip',
      [
        'link',
        'add',
        'link',
        nic.parent,
        'name',
        nic.name,
        ...addrMtu(nic),
        'netns',
        String(pid),
        'type',
        'macvlan',
        'mode',
        'bridge',
      ],
    ],
    inNs(pid, 'link', 'set', 'dev', nic.name, 'up'),
  ];
}

/** Host interface `parent` moved into the container (down first), renamed `name` there with its MAC and MTU, up. */
export function physicalAttachCommands(pid: number, nic: InsideNic): [string, string[]][] {
  return [
    ['ip', ['link', 'set', 'dev', nic.parent, 'down']],
    ['ip', ['link', 'set', 'dev', nic.parent, 'netns', String(pid)]],
    inNs(pid, 'link', 'set', 'dev', nic.parent, 'name', nic.name, ...addrMtu(nic)),
    inNs(pid, 'link', 'set', 'dev', nic.name, 'up'),
  ];
}

/** What a physical interface had before it was moved in (put back when it is given back). */
export interface PhysicalState {
  hwaddr: string;
  mtu: number;
  /** Its ifindex, kept across namespace moves: how it is found again when it came back on its own. */
  ifindex?: number;
}

/** The physical interface given back: down, its host name (and MAC and MTU it had) again, moved to the namespace of `hostPid` (svcd's). */
export function physicalDetachCommands(
  pid: number,
  nic: Pick<InsideNic, 'name' | 'parent'>,
  hostPid: number,
  was?: PhysicalState,
): [string, string[]][] {
  return [
    inNs(pid, 'link', 'set', 'dev', nic.name, 'down'),
    inNs(
      pid,
      'link',
      'set',
      'dev',
      nic.name,
      'name',
      nic.parent,
      ...(was ? ['address', was.hwaddr, 'mtu', String(was.mtu)] : []),
    ),
    inNs(pid, 'link', 'set', 'dev', nic.parent, 'netns', String(hostPid)),
  ];
}

const gone = (e: unknown) =>
  e instanceof HostCommandError && /Cannot find device|does not exist|No such device/i.test(e.stderr);
const run = (cmds: [string, string[]][], signal?: AbortSignal) =>
  cmds.reduce<Promise<unknown>>(
    (p, [file, args]) => p.then(() => runCommand(file, args, { timeoutMs: 30_000, ...(signal ? { signal } : {}) })),
    Promise.resolve(),
  );

/** The interfaces in the network namespace of `pid` (undefined when it is gone). */
export async function readContainerLinks(pid: number): Promise<Set<string> | undefined> {
  const text = await readFile(`/proc/${pid}/net/dev`, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : new Set(parseNetDev(text).keys());
}

export async function attachMacvlan(pid: number, nic: InsideNic, signal?: AbortSignal): Promise<void> {
  // One left from an earlier try would make `link add` fail: it goes first.
  await detachMacvlan(pid, nic.name, signal);
  await run(macvlanAttachCommands(pid, nic), signal).catch(async (e: unknown) => {
    await detachMacvlan(pid, nic.name).catch(() => undefined);
    throw e;
  });
}

/** Delete the macvlan inside; nothing there is success. */
export async function detachMacvlan(pid: number, name: string, signal?: AbortSignal): Promise<void> {
  await run([inNs(pid, 'link', 'del', 'dev', name)], signal).catch((e: unknown) => {
    if (!gone(e)) throw e;
  });
}

/** A host interface's MAC, MTU and ifindex, read from sysfs (undefined when the host has no such interface). */
export async function readPhysicalState(
  name: string,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<PhysicalState | undefined> {
  const dir = path.join(sysRoot, 'class/net', name);
  const read = (f: string) =>
    readFile(path.join(dir, f), 'utf8').then(
      (t) => t.trim(),
      () => undefined,
    );
  const [hwaddr, mtu, ifindex] = await Promise.all([read('address'), read('mtu'), read('ifindex')]);
  return hwaddr === undefined || mtu === undefined
    ? undefined
    : { hwaddr, mtu: Number(mtu), ...(ifindex ? { ifindex: Number(ifindex) } : {}) };
}

/** Move host interface `nic.parent` in; returns the MAC and MTU it had, to be put back when it is given back. */
export async function attachPhysical(
  pid: number,
  nic: InsideNic,
  hostPid: number,
  signal?: AbortSignal,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<PhysicalState> {
  const was = await readPhysicalState(nic.parent, { sysRoot });
  if (!was) throw new Error(`host interface "${nic.parent}" does not exist`);
  const [down, move, ...inside] = physicalAttachCommands(pid, nic);
  await run([down!, move!], signal);
  try {
    await run(inside, signal);
  } catch (e) {
    // Given back at once under its own name (it may or may not have been renamed).
    const links = await readContainerLinks(pid);
    const now = links?.has(nic.parent) ? nic.parent : nic.name;
    await run(physicalDetachCommands(pid, { name: now, parent: nic.parent }, hostPid, was)).catch(() => undefined);
    throw e;
  }
  return was;
}

/**
 * A physical interface back on the host after its container: its own name, MAC and MTU again. One moved in
 * live whose container died on its own comes back (the kernel moves it when the namespace goes) under its
 * inside name, or `dev<N>` when that was taken; one LXC moved in at the start comes back under its own name,
 * but with the MAC and MTU the container's config gave it. Found by its ifindex. Nothing to do when it is as it
 * was, or when another interface has its name. False when it is not on the host (not back yet, or a virtual one
 * deleted with the namespace).
 */
export async function reclaimPhysical(
  parent: string,
  was: PhysicalState,
  signal?: AbortSignal,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<boolean> {
  if (was.ifindex === undefined) return true;
  const net = path.join(sysRoot, 'class/net');
  let name: string | undefined;
  const own = await readPhysicalState(parent, { sysRoot });
  if (own) {
    if (own.ifindex !== was.ifindex || (own.hwaddr === was.hwaddr && own.mtu === was.mtu)) return true;
    name = parent;
  } else {
    for (const n of await readdir(net).catch(() => [] as string[]))
      if (Number((await readFile(path.join(net, n, 'ifindex'), 'utf8').catch(() => '')).trim()) === was.ifindex)
        name = n;
  }
  if (name === undefined) return false;
  // Down for the change (a MAC may not change while up), and up again if it was.
  const up = (Number((await readFile(path.join(net, name, 'flags'), 'utf8').catch(() => '0')).trim()) & 1) === 1;
  await run(
    [
      ['ip', ['link', 'set', 'dev', name, 'down']],
      [
        'ip',
        [
          'link',
          'set',
          'dev',
          name,
          ...(name !== parent ? ['name', parent] : []),
          'address',
          was.hwaddr,
          'mtu',
          String(was.mtu),
        ],
      ],
      ...(up && name === parent ? [['ip', ['link', 'set', 'dev', parent, 'up']] as [string, string[]]] : []),
    ],
    signal,
  );
  return true;
}

/** Give a physical interface back to the host (`hostPid`'s namespace); not in the container is success. */
export async function detachPhysical(
  pid: number,
  nic: Pick<InsideNic, 'name' | 'parent'>,
  hostPid: number,
  was?: PhysicalState,
  signal?: AbortSignal,
): Promise<void> {
  const links = await readContainerLinks(pid);
  if (!links?.has(nic.name)) return;
  await run(physicalDetachCommands(pid, nic, hostPid, was), signal);
}
