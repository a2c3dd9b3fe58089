/**
 * Where a bench's window spent the host's CPU: the whole host's busy time (/proc/stat), and within it svcd's daemon
 * process, its PostgreSQL server (the postmaster naming the state dir and its children) and the bench itself, each
 * by its own user and system time (a process's reaped children, as lxc-start's foreground part, are in the rest).
 * A process that ended inside the window is in the rest too. For benches run by hand, never a test.
 */
import { readdir, readFile } from 'node:fs/promises';

const TICK = 100; // USER_HZ on Linux

export interface CpuSample {
  /** Busy seconds of the whole host since boot (all cores). */
  host: number;
  /** Own CPU seconds by group. */
  daemon: number;
  postgres: number;
  bench: number;
}

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  cpu: number;
}

async function procStat(pid: string): Promise<ProcStat | undefined> {
  const raw = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const close = raw.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = raw.slice(close + 2).split(' ');
  // after the comm: state(0) ppid(1) … utime(11) stime(12)
  return {
    pid: Number(pid),
    ppid: Number(f[1]),
    comm: raw.slice(raw.indexOf('(') + 1, close),
    cpu: (Number(f[11]) + Number(f[12])) / TICK,
  };
}

/** One sample; `stateDir` tells svcd's processes (their argv names it, or their parent's does). */
export async function sampleCpu(stateDir: string): Promise<CpuSample> {
  const [cpuLine] = (await readFile('/proc/stat', 'utf8')).split('\n');
  const v = cpuLine!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const host = (v[0]! + v[1]! + v[2]! + v[5]! + v[6]! + v[7]!) / TICK;
  const out: CpuSample = { host, daemon: 0, postgres: 0, bench: 0 };
  const stats: ProcStat[] = [];
  const argvOf = new Map<number, string>();
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = await procStat(e);
    if (!s) continue;
    stats.push(s);
    if (s.comm === 'node' || s.comm === 'postgres')
      argvOf.set(s.pid, await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => ''));
  }
  const postmasters = new Set(
    stats.filter((s) => s.comm === 'postgres' && argvOf.get(s.pid)?.includes(stateDir)).map((s) => s.pid),
  );
  for (const s of stats) {
    if (s.pid === process.pid) out.bench += s.cpu;
    else if (postmasters.has(s.pid) || postmasters.has(s.ppid)) out.postgres += s.cpu;
    else if (s.comm === 'node' && /svcd(\.js)?\0daemon|main\.ts/.test(argvOf.get(s.pid) ?? '')) out.daemon += s.cpu;
  }
  return out;
}

/** What a window (from `a` to `b`) spent, as a short text: host, daemon, postgres, the rest (bench left out). */
export function cpuSpent(a: CpuSample, b: CpuSample): string {
  const host = b.host - a.host;
  const daemon = b.daemon - a.daemon;
  const postgres = b.postgres - a.postgres;
  const bench = b.bench - a.bench;
  const rest = host - daemon - postgres - bench;
  const s = (x: number) => x.toFixed(2);
  return `host CPU ${s(host - bench)} s: svcd ${s(daemon)}, its PostgreSQL ${s(postgres)}, the rest ${s(rest)}`;
}
