/**
 * Every container's state under an LXC path, spawning nothing when the host's records settle it (the
 * periodic sample of the container observer; `lxc-ls -f` costs ~1.5 ms of CPU per container, and wakes
 * each container's monitor, every tick). /proc/net/unix is read once for all of them, then each container
 * costs what readHostState costs with the socket known: a stat when stopped, three small reads of
 * procfs/cgroupfs when up. A container whose records do not settle its state (starting, stopping) is
 * asked with `lxc-info`, alone.
 */
import { readdir } from 'node:fs/promises';
import { defaultSources, readHostState, type HostStateSources } from './host-state.ts';
import type { ContainerState, LxcState } from './lxc-args.ts';

/** The abstract socket names (`@…`) /proc/net/unix lists as listening. */
export function listeningSockets(procNetUnix: string): Set<string> {
  const out = new Set<string>();
  for (const line of procNetUnix.split('\n')) {
    if (!line.includes('@')) continue;
    const f = line.trim().split(/\s+/);
    // Flags 00010000 is __SO_ACCEPTCON: a listening socket.
    if (f.length >= 8 && f[7]!.startsWith('@') && (parseInt(f[3]!, 16) & 0x10000) !== 0) out.add(f[7]!);
  }
  return out;
}

/**
 * The listening socket set, read at most once per `ttlMs` and shared by the state reads in between (a
 * resync reconciles every container: one read of /proc/net/unix each, ~1.5 ms with 1000 running, made
 * the pass O(N²)). A stale set is safe with readHostState: it answers only when the socket and the
 * container's cgroup agree, so a set that missed a start or a stop ends in lxc-info, never a wrong state.
 */
export function createListeningCache(deps: {
  ttlMs: number;
  now?: () => number;
  src?: Pick<HostStateSources, 'unixSockets'>;
}): () => Promise<ReadonlySet<string>> {
  const now = deps.now ?? Date.now;
  let last: { at: number; set: Promise<ReadonlySet<string>> } | undefined;
  return () => {
    if (last && now() - last.at < deps.ttlMs) return last.set;
    const set = (deps.src ?? defaultSources).unixSockets().then(listeningSockets);
    last = { at: now(), set };
    set.catch(() => (last = undefined));
    return set;
  };
}

export interface HostStatesDeps {
  src?: HostStateSources;
  /** The container directories under the LXC path (default: readdir). */
  names?: (lxcPath: string) => Promise<string[]>;
  /** The fallback for an unsettled state (lxc-info). */
  lxcInfo: (ref: { name: string; lxcPath: string; signal?: AbortSignal | undefined }) => Promise<ContainerState>;
}

const containerDirs = async (lxcPath: string) =>
  (await readdir(lxcPath, { withFileTypes: true }).catch(() => [])).filter((d) => d.isDirectory()).map((d) => d.name);

/** What LXC would list under `lxcPath` (one entry per container directory, or per name of `only`), with state and init pid. */
export async function readHostStates(
  lxcPath: string,
  deps: HostStatesDeps,
  signal?: AbortSignal,
  only?: readonly string[],
): Promise<{ name: string; state: LxcState; pid?: number }[]> {
  const src = deps.src ?? defaultSources;
  const names = only ?? (await (deps.names ?? containerDirs)(lxcPath));
  if (names.length === 0) return [];
  const listening = listeningSockets(await src.unixSockets());
  const out: { name: string; state: LxcState; pid?: number }[] = [];
  for (const name of names) {
    signal?.throwIfAborted();
    const s =
      (await readHostState({ name, lxcPath, listening }, src).catch(() => undefined)) ??
      (await deps.lxcInfo({ name, lxcPath, signal }));
    out.push({ name, state: s.state, ...(s.pid !== undefined ? { pid: s.pid } : {}) });
  }
  return out;
}
