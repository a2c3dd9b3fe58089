/**
 * A running container's nics, live: attached when added, detached when removed, detached and attached
 * again when changed, attached again when their veth was deleted behind svcd's back, and put back on
 * their bridge when it was made anew. Around each veth, what LXC does not do: the tc limits, the MAC
 * filter (`bridge svcd`) and the host routes, set when they change or the veth is new, and removed when
 * the nic goes or the container stops (releaseLiveNics). What is attached is recorded in the container's
 * facts (device → what), like the live mounts.
 */
import { terminalMessageOf, TerminalError } from '../runtime/index.ts';
import type { LxcNicsAdapter } from '../adapters.ts';
import type { PhysicalState } from '../../host/lxc/live-nic-types.ts';
import type { ResolvedNic } from './resolve-nics.ts';

/** One nic attached to a running container (by LXC at its start, or live by svcd). */
export interface LiveNicRecord {
  /** macvlan and physical: made or moved into the container (no host side); absent: a veth (bridged or p2p). */
  inside?: 'macvlan' | 'physical';
  /** Its name inside (macvlan and physical). */
  name?: string;
  /** A physical nic moved in live by svcd (one LXC moved in at start, LXC gives back at stop). */
  movedLive?: boolean;
  /**
   * The MAC and MTU the physical interface had on the host, put back when it is given back: of one moved in
   * live, and of one LXC moved in at start whose config changes them.
   */
  was?: PhysicalState;
  /** What was attached, as a comparable text (names, bridge, MAC, MTU). */
  key: string;
  hostName: string;
  parent: string;
  /** The limits, filter and routes set around it (comparable text; '' before they are set). */
  extras: string;
  routes: string[];
  ipv4?: string | undefined;
  ipv6?: string | undefined;
  filtered: boolean;
}

type NicHost = Pick<
  LxcNicsAdapter,
  | 'attachNic'
  | 'detachNic'
  | 'readHostVeth'
  | 'adoptNic'
  | 'rejoinBridge'
  | 'applyNicLimits'
  | 'applyNicFilter'
  | 'applyNicRoutes'
  | 'attachInsideNic'
  | 'detachInsideNic'
  | 'reclaimPhysical'
  | 'readContainerLinks'
>;

const insideOf = (n: ResolvedNic) => (n.nictype === 'macvlan' || n.nictype === 'physical' ? n.nictype : undefined);
const attachKey = (n: ResolvedNic) =>
  JSON.stringify([n.hostName, n.name, n.parent, n.hwaddr, n.mtu ?? 0, ...(insideOf(n) ? [n.nictype] : [])]);
/** Routes go via the static address on the bridge, or (p2p: none) straight to the host side. */
const viaOf = (r: { ipv4?: string | undefined; ipv6?: string | undefined }) =>
  r.ipv4 || r.ipv6 ? { ipv4: r.ipv4, ipv6: r.ipv6 } : undefined;
const routeDevOf = (n: ResolvedNic) => n.parent || n.hostName;
const extrasKey = (n: ResolvedNic) =>
  JSON.stringify([n.ingressBits ?? 0, n.egressBits ?? 0, n.macFiltering, n.ipv4 ?? '', n.ipv6 ?? '', n.routes]);

export interface EnsureLiveNicsInput {
  lxc: NicHost;
  pid: number;
  /** Started by this reconcile: LXC attached every nic; only the extras are set. */
  startedNow: boolean;
  nics: readonly ResolvedNic[];
  /** device → record; undefined when nothing was recorded yet (an svcd that did not know the container). */
  records: Record<string, LiveNicRecord> | undefined;
  /** Before a live attach (a managed network must be ready): throws to wait. */
  beforeAttach(nic: ResolvedNic): Promise<void>;
  /** Started now: what the physical nics LXC moved in had on the host (physicalStatesOf), put back when they come back. */
  physicalWas?: Record<string, PhysicalState> | undefined;
  signal?: AbortSignal | undefined;
}

/** How long a physical nic LXC moved in is looked for on the host after the stop (a virtual one never comes back). */
const RECLAIM_WAIT_MS = 5_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Before a start: the MAC, MTU and ifindex of each physical nic whose config changes them (`hwaddr`, `mtu`), as
 * the host has it, to be put back when LXC gives it back (it keeps the config's MAC).
 */
export async function physicalStatesOf(
  nics: readonly ResolvedNic[],
  lxc: Pick<LxcNicsAdapter, 'readPhysical'>,
): Promise<Record<string, PhysicalState>> {
  const out: Record<string, PhysicalState> = {};
  for (const n of nics) {
    if (n.nictype !== 'physical' || (!n.hwaddr && n.mtu === undefined)) continue;
    const was = await lxc.readPhysical(n.parent);
    if (was) out[n.device] = was;
  }
  return out;
}

const fail = (device: string, what: string, e: unknown): never => {
  throw new TerminalError(`nic "${device}": cannot ${what}: ${terminalMessageOf(e)}`, { cause: e });
};

/**
 * Remove what svcd set around a nic's veth (limits, filter, routes) and, with `detach` (the pid of the
 * running container), the veth itself, or the macvlan, or the physical interface given back.
 */
async function release(lxc: NicHost, rec: LiveNicRecord, detach: number | false, signal?: AbortSignal): Promise<void> {
  if (rec.inside) {
    if (detach)
      await lxc.detachInsideNic(
        detach,
        { nictype: rec.inside, name: rec.name!, parent: rec.parent, was: rec.was },
        signal,
      );
    // Its container is gone without svcd giving it back: the kernel did (under another name), or LXC did (with
    // the MAC and MTU the config gave it), a moment after the stop returned: looked for a while.
    else if (rec.inside === 'physical' && rec.was)
      for (
        let waited = 0;
        !(await lxc.reclaimPhysical(rec.parent, rec.was, signal)) && !rec.movedLive && waited < RECLAIM_WAIT_MS;
        waited += 50
      )
        await sleep(50);
    return;
  }
  if (rec.routes.length) await lxc.applyNicRoutes('del', rec.routes, viaOf(rec), rec.parent, signal);
  if (rec.filtered) await lxc.applyNicFilter(rec.hostName, undefined, signal);
  await lxc.applyNicLimits(rec.hostName, {}, signal);
  if (detach) await lxc.detachNic(rec.hostName, signal);
}

/**
 * Before a stop: the physical interfaces svcd moved in live go back to the host (LXC gives back only
 * those of its config; with the network namespace gone a real one would come back under its inside
 * name, and a virtual one would be deleted).
 */
export async function giveBackLiveNics(
  lxc: NicHost,
  pid: number,
  records: Record<string, LiveNicRecord> | undefined,
  signal?: AbortSignal,
): Promise<void> {
  for (const rec of Object.values(records ?? {}))
    if (rec.inside === 'physical' && rec.movedLive) await release(lxc, rec, pid, signal);
}

/** The container stopped (or is deleted): what svcd set around its veths goes (LXC removed the veths). */
export async function releaseLiveNics(
  lxc: NicHost,
  records: Record<string, LiveNicRecord> | undefined,
  signal?: AbortSignal,
): Promise<void> {
  for (const rec of Object.values(records ?? {})) await release(lxc, rec, false, signal);
}

/** What the drift observer checks of the recorded nics: names inside (macvlan, physical), host-side veths. */
export function nicNamesOf(records: Record<string, LiveNicRecord> | undefined): { inside: string[]; veths: string[] } {
  const recs = Object.values(records ?? {});
  return {
    inside: recs.filter((r) => r.inside).map((r) => r.name!),
    veths: recs.filter((r) => !r.inside).map((r) => r.hostName),
  };
}

/** Bring the running container's nics to `nics`; returns the records (device → what is attached) and whether they changed. */
export async function ensureLiveNics(
  input: EnsureLiveNicsInput,
): Promise<{ records: Record<string, LiveNicRecord>; changed: boolean }> {
  const { lxc, pid, signal } = input;
  const wanted = new Map(input.nics.map((n) => [n.device, n]));
  let changed = !input.records;
  const records: Record<string, LiveNicRecord> = { ...(input.records ?? {}) };
  const recordOf = (n: ResolvedNic, movedLive = false): LiveNicRecord => {
    const inside = insideOf(n);
    const base = {
      key: attachKey(n),
      hostName: n.hostName,
      parent: inside ? n.parent : routeDevOf(n),
      extras: '',
      routes: [],
      filtered: false,
    };
    return inside
      ? { ...base, inside, name: n.name, ...(movedLive && inside === 'physical' ? { movedLive } : {}) }
      : base;
  };
  let links: Set<string> | undefined;
  const hasInside = async (name: string) => (links ??= await lxc.readContainerLinks(pid))?.has(name) ?? false;

  if (input.startedNow || !input.records) {
    // LXC attached what the config names; an unknown running container: what has its veth is taken as attached.
    for (const k of Object.keys(records)) delete records[k];
    for (const n of wanted.values()) {
      if (input.startedNow || (insideOf(n) ? await hasInside(n.name) : await lxc.readHostVeth(n.hostName))) {
        const was = input.startedNow ? input.physicalWas?.[n.device] : undefined;
        records[n.device] = { ...recordOf(n), ...(was ? { was } : {}) };
        continue;
      }
      if (insideOf(n)) continue;
      // Its interface under another host-side name (LXC's own, from an svcd before stable names): adopted
      // under the stable name, as attached with the MAC (and MTU, where one is asked for) it has, so that
      // one that differs from the desired is replaced below.
      const found = await lxc.adoptNic(pid, n, signal).catch((e: unknown) => fail(n.device, 'adopt its veth', e));
      if (found)
        records[n.device] = {
          ...recordOf(n),
          key: attachKey({ ...n, hwaddr: found.hwaddr, ...(n.mtu !== undefined ? { mtu: found.mtu } : {}) }),
        };
    }
  }
  if (!input.startedNow) {
    for (const [device, rec] of Object.entries(records)) {
      const w = wanted.get(device);
      if (w && rec.key === attachKey(w)) continue;
      await release(lxc, rec, pid, signal).catch((e: unknown) =>
        fail(device, 'detach it from the running container', e),
      );
      links = undefined;
      delete records[device];
      changed = true;
    }
    for (const n of wanted.values()) {
      const rec = records[n.device];
      if (insideOf(n)) {
        if (rec && (await hasInside(n.name))) continue;
        const was = await lxc
          .attachInsideNic(pid, { ...n, nictype: insideOf(n)! }, signal)
          .catch((e: unknown) => fail(n.device, 'attach it to the running container', e));
        records[n.device] = { ...recordOf(n, true), ...(was ? { was } : {}) };
        changed = true;
        continue;
      }
      const veth = await lxc.readHostVeth(n.hostName);
      if (rec && veth) {
        if (n.nictype === 'p2p') continue;
        if (veth.master !== n.parent)
          await lxc
            .rejoinBridge(n, signal)
            .catch((e: unknown) => fail(n.device, `put ${n.hostName} back on bridge ${n.parent}`, e));
        continue;
      }
      await input.beforeAttach(n);
      await lxc
        .attachNic(pid, n, signal)
        .catch((e: unknown) => fail(n.device, 'attach it to the running container', e));
      records[n.device] = recordOf(n);
      changed = true;
    }
  }
  // Limits, filter and routes: set where they differ (a veth new since has none).
  for (const n of wanted.values()) {
    const rec = records[n.device];
    if (!rec || rec.inside || rec.extras === extrasKey(n)) continue;
    try {
      if (rec.routes.length) await lxc.applyNicRoutes('del', rec.routes, viaOf(rec), rec.parent, signal);
      // Started now: LXC made the veth, which has no qdisc yet.
      const limits = { ingressBits: n.ingressBits, egressBits: n.egressBits };
      await lxc.applyNicLimits(n.hostName, limits, signal, input.startedNow);
      if (n.macFiltering || rec.filtered) await lxc.applyNicFilter(n.hostName, n.macFiltering ? n : undefined, signal);
      if (n.routes.length) await lxc.applyNicRoutes('replace', n.routes, viaOf(n), routeDevOf(n), signal);
    } catch (e) {
      fail(n.device, 'set its limits, MAC filter or routes', e);
    }
    records[n.device] = {
      ...rec,
      extras: extrasKey(n),
      routes: n.routes,
      ipv4: n.ipv4,
      ipv6: n.ipv6,
      filtered: n.macFiltering,
    };
    changed = true;
  }
  return { records, changed };
}
