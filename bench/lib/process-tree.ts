/**
 * The memory of a daemon's whole process tree: the daemon, what it started and owns (the spawn helper,
 * a database server, dnsmasq, proxy forwarders, lxd's forkproxy...), not its containers.
 *
 * A process belongs to the tree when it descends from the daemon (by parent pid), or when one of its
 * arguments names a path under the daemon's state directory (dnsmasq and svcd-proxy forwarders detach
 * and are re-parented to init; a database server started through the spawn helper may be too). LXC
 * monitors (`[lxc monitor] <path> <name>`) and everything under them are the containers: both daemons
 * have them, so neither counts them. The reading process and its ancestors (the bench, whose argv names
 * the socket) are left out. Everything is read from /proc: no process is spawned to measure.
 *
 * RSS is the sum of VmRSS (shared pages counted once per process that maps them); PSS is the sum of
 * `Pss` from /proc/<pid>/smaps_rollup (each shared page divided between the processes mapping it), the
 * figure that adds up across processes.
 */
import { readdir, readFile } from 'node:fs/promises';

export interface ProcInfo {
  pid: number;
  ppid: number;
  comm: string;
  argv: string[];
}

export interface TreeProcess extends ProcInfo {
  rssKiB: number;
  pssKiB: number;
}

export interface TreeMemory {
  rssKiB: number;
  pssKiB: number;
  processes: TreeProcess[];
}

/** `ppid` and `comm` from the text of /proc/<pid>/stat (comm may hold spaces and parentheses). */
export function parseStat(text: string): { comm: string; ppid: number } | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text.slice(close + 2).split(' ');
  const ppid = Number(rest[1]);
  return Number.isInteger(ppid) ? { comm: text.slice(open + 1, close), ppid } : undefined;
}

/** A `Name: <n> kB` line of /proc/<pid>/status or smaps_rollup, in KiB; undefined when absent. */
export function parseKiBField(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

const isLxcMonitor = (p: ProcInfo) => (p.argv[0] ?? '').startsWith('[lxc monitor]');

/**
 * Pure: which of `procs` make up the tree of `root`. `ownedPath` (the state directory) adds processes
 * whose arguments name something under it; `exclude` pids (and their descendants) and `skip` pids
 * (alone: the reader's ancestors, whose descendants include the root) are never counted.
 */
export function selectTree(
  procs: readonly ProcInfo[],
  root: number,
  opts: { ownedPath?: string; exclude?: readonly number[]; skip?: readonly number[] } = {},
): ProcInfo[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const children = new Map<number, ProcInfo[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const excluded = new Set<number>();
  const excludeSubtree = (pid: number) => {
    if (excluded.has(pid)) return;
    excluded.add(pid);
    for (const c of children.get(pid) ?? []) excludeSubtree(c.pid);
  };
  for (const pid of opts.exclude ?? []) if (pid !== root) excludeSubtree(pid);
  for (const p of procs) if (isLxcMonitor(p)) excludeSubtree(p.pid);
  for (const pid of opts.skip ?? []) if (pid !== root) excluded.add(pid);
  const chosen = new Map<number, ProcInfo>();
  const take = (p: ProcInfo) => {
    if (excluded.has(p.pid) || chosen.has(p.pid)) return;
    chosen.set(p.pid, p);
    for (const c of children.get(p.pid) ?? []) take(c);
  };
  const rootProc = byPid.get(root);
  if (!rootProc) return [];
  take(rootProc);
  if (opts.ownedPath) {
    const prefix = opts.ownedPath.endsWith('/') ? opts.ownedPath : `${opts.ownedPath}/`;
    const names = (a: string) => a === opts.ownedPath || a.includes(prefix);
    for (const p of procs) if (p.argv.some(names)) take(p);
  }
  return [...chosen.values()].sort((a, b) => a.pid - b.pid);
}

async function readProc(pid: number): Promise<ProcInfo | undefined> {
  const [stat, cmdline] = await Promise.all([
    readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''),
    readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
  ]);
  const s = parseStat(stat);
  return s ? { pid, ppid: s.ppid, comm: s.comm, argv: cmdline.split('\0').filter(Boolean) } : undefined;
}

/** Every process of /proc (a process gone while reading is skipped). */
export async function listProcesses(): Promise<ProcInfo[]> {
  const pids = (await readdir('/proc')).filter((e) => /^\d+$/.test(e)).map(Number);
  return (await Promise.all(pids.map(readProc))).filter((p): p is ProcInfo => p !== undefined);
}

/** This process and its ancestors: the bench and whatever runs it (never part of a daemon's tree). */
export function selfAndAncestors(procs: readonly ProcInfo[], self = process.pid): number[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const out: number[] = [];
  for (let p = byPid.get(self); p && !out.includes(p.pid); p = byPid.get(p.ppid)) out.push(p.pid);
  return out;
}

/** RSS and PSS of the tree of `root` (see the module comment); undefined when `root` is gone. */
export async function readTreeMemory(root: number, opts: { ownedPath?: string } = {}): Promise<TreeMemory | undefined> {
  const procs = await listProcesses();
  const members = selectTree(procs, root, { ...opts, skip: selfAndAncestors(procs) });
  if (!members.length) return undefined;
  const measured = await Promise.all(
    members.map(async (p) => {
      const [status, rollup] = await Promise.all([
        readFile(`/proc/${p.pid}/status`, 'utf8').catch(() => ''),
        readFile(`/proc/${p.pid}/smaps_rollup`, 'utf8').catch(() => ''),
      ]);
      const rssKiB = parseKiBField(status, 'VmRSS');
      // A kernel thread or a process gone since the listing has no VmRSS: nothing to count.
      return rssKiB === undefined ? undefined : { ...p, rssKiB, pssKiB: parseKiBField(rollup, 'Pss') ?? rssKiB };
    }),
  );
  const processes = measured.filter((p): p is TreeProcess => p !== undefined);
  if (!processes.some((p) => p.pid === root)) return undefined;
  return {
    rssKiB: processes.reduce((s, p) => s + p.rssKiB, 0),
    pssKiB: processes.reduce((s, p) => s + p.pssKiB, 0),
    processes,
  };
}

/** One line per process: `comm pid RSS/PSS`, largest first (for the bench log). */
export function describeTree(t: TreeMemory, fmt: (kib: number) => string): string {
  return [...t.processes]
    .sort((a, b) => b.pssKiB - a.pssKiB)
    .map((p) => `${p.comm}[${p.pid}] ${fmt(p.rssKiB)}/${fmt(p.pssKiB)}`)
    .join(', ');
}
