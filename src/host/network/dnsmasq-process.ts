/**
 * One network's dnsmasq as a process: found through its pid file and /proc/<pid>/cmdline (it must name
 * this network's conf file), or by scanning /proc for a leftover without a pid file; started detached
 * (dnsmasq daemonizes: it outlives svcd and keeps serving leases across svcd restarts); stopped with
 * SIGTERM, then SIGKILL. Nothing here spawns but `start`.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { dnsmasqFiles } from './render-dnsmasq-conf.ts';

export interface DnsmasqProcessDeps {
  procRoot: string;
  run: (file: string, args: readonly string[]) => Promise<string>;
  /** Send a signal (default process.kill). */
  kill?: (pid: number, signal: NodeJS.Signals) => void;
}

/** dnsmasq's argv: the conf file only (everything else is in it). */
export const dnsmasqArgs = (dir: string) => [`--conf-file=${dnsmasqFiles(dir).conf}`];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createDnsmasqProcess(deps: DnsmasqProcessDeps) {
  const kill = deps.kill ?? ((pid: number, signal: NodeJS.Signals) => process.kill(pid, signal));

  /** Is `pid` a live (not zombie) dnsmasq of the network in `dir`? */
  async function isOurs(pid: number, dir: string): Promise<boolean> {
    const cmdline = await readFile(path.join(deps.procRoot, String(pid), 'cmdline'), 'utf8').catch(() => '');
    const args = cmdline.split('\0');
    return path.basename(args[0] ?? '') === 'dnsmasq' && args.includes(dnsmasqArgs(dir)[0]!);
  }

  /**
   * Has `pid` finished exiting (gone, or a zombie)? Its cmdline empties before its sockets close, so
   * only the zombie state says its ports are free for the next dnsmasq.
   */
  async function exited(pid: number): Promise<boolean> {
    const stat = await readFile(path.join(deps.procRoot, String(pid), 'stat'), 'utf8').catch(() => undefined);
    return stat === undefined || /^\d+ \(.*\) [ZX] /s.test(stat);
  }

  /** The pid in the pid file when that process is this network's dnsmasq. */
  async function running(dir: string): Promise<number | undefined> {
    const text = await readFile(dnsmasqFiles(dir).pid, 'utf8').catch(() => '');
    const pid = Number(text.trim());
    return Number.isInteger(pid) && pid > 0 && (await isOurs(pid, dir)) ? pid : undefined;
  }

  /** Every live dnsmasq of this network (pid file or not): a scan of /proc. */
  async function scan(dir: string): Promise<number[]> {
    const pids = (await readdir(deps.procRoot).catch(() => [] as string[])).filter((e) => /^\d+$/.test(e)).map(Number);
    const ours = await Promise.all(pids.map((pid) => isOurs(pid, dir)));
    return pids.filter((_, i) => ours[i]);
  }

  async function signal(pid: number, sig: NodeJS.Signals): Promise<void> {
    try {
      kill(pid, sig);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  }

  /** Stop these processes: SIGTERM, then SIGKILL after 2 s; resolves when none is left. */
  async function stopAll(pids: number[], dir: string): Promise<void> {
    if (pids.length === 0) return;
    for (const pid of pids) await signal(pid, 'SIGTERM');
    for (let waited = 0; ; waited += 20) {
      const left = (await Promise.all(pids.map(async (pid) => ((await exited(pid)) ? undefined : pid)))).filter(
        (p): p is number => p !== undefined,
      );
      if (left.length === 0) return;
      if (waited === 2000) for (const pid of left) await signal(pid, 'SIGKILL');
      if (waited > 4000) throw new Error(`dnsmasq of ${dir} does not stop (pids ${left.join(', ')})`);
      await sleep(20);
    }
  }

  return {
    running,

    /** Stop every dnsmasq of the network, with or without pid file. */
    async stop(dir: string): Promise<void> {
      const pids = new Set(await scan(dir));
      const fromFile = await running(dir);
      if (fromFile !== undefined) pids.add(fromFile);
      await stopAll([...pids], dir);
      await rm(dnsmasqFiles(dir).pid, { force: true });
    },

    /** Start it (after stopping any other of this network); resolves once the daemon wrote its pid file. */
    async start(dir: string): Promise<number> {
      await this.stop(dir);
      await deps.run('dnsmasq', dnsmasqArgs(dir));
      const pid = await running(dir);
      if (pid === undefined) throw new Error(`dnsmasq of ${dir} did not start`);
      return pid;
    },

    /** SIGHUP: dnsmasq reads its dhcp-hostsdir again (a removed entry is only noticed so). */
    async reload(dir: string): Promise<void> {
      const pid = await running(dir);
      if (pid !== undefined) await signal(pid, 'SIGHUP');
    },
  };
}

export type DnsmasqProcess = ReturnType<typeof createDnsmasqProcess>;
