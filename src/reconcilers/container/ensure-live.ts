/**
 * Bring a running (or frozen) container to its desired config without a restart: its cgroup limits, the
 * disks and unix device nodes mounted in it, its nics (ensure-live-nics.ts). What cannot change while it runs is compared with what it was
 * started with and reported as pending a restart (live-keys.ts).
 *
 * What was mounted live is recorded in the container's facts (target → what was mounted there), so a
 * removed device is unmounted again, also after an svcd restart; a mount missing from the container's
 * mount table (unmounted behind svcd's back) is mounted again; a changed one is replaced.
 */
import type { ContainerRow } from '../../desired/schema/index.ts';
import { cgroupSettingsOf, deviceRuleCovered, deviceRuleOf } from '../../host/lxc/cgroup-settings.ts';
import { CgroupWriteError, MountHelperMissingError } from '../../host/lxc/lxc-errors.ts';
import type { LiveMount } from '../../host/lxc/live-mounts.ts';
import type { LxcDiskMount, LxcLimits, LxcUnixDevice } from '../../host/lxc/types.ts';
import type { PhysicalState } from '../../host/lxc/live-nic-types.ts';
import { TerminalError, terminalMessageOf } from '../runtime/index.ts';
import type { LxcCgroupsAdapter, LxcMountsAdapter, LxcNicsAdapter, ProxyAdapter } from '../adapters.ts';
import { ensureLiveNics, nicNamesOf, type LiveNicRecord } from './ensure-live-nics.ts';
import { ensureProxies } from './ensure-proxies.ts';
import { pendingRestartOf, restartViewOf, type RestartView } from './live-keys.ts';
import type { ResolvedNic } from './resolve-nics.ts';
import { hotplugSourcesOf } from './device-specs.ts';
import type { HostFacts } from './lxc-spec.ts';

/** One mount svcd made in a running container (or LXC made at its start). */
export interface LiveMountRecord {
  /** What was mounted, as a comparable text (source and options). */
  key: string;
  /** The device-cgroup rule allowed with it (unix devices), denied again when it goes. */
  rule?: string;
}

/** What a running container has of its config: recorded in the reconcile facts, so it outlives svcd. */
export interface LiveFacts {
  /** Target inside the container → what is mounted there. */
  mounts: Record<string, LiveMountRecord>;
  /** The part of the config that only a start applies, as the running container was started with. */
  startedWith: RestartView;
  /** Device → the nic attached (ensure-live-nics.ts). */
  nics?: Record<string, LiveNicRecord>;
  /** The nat rules of its proxy devices as applied (JSON; ensure-proxies.ts). */
  proxyNat?: string;
}

/** What this process knows of each running container's live state: for the drift observer and `GET .../state`. */
export interface LiveRegistry {
  set(id: string, entry: LiveEntry): void;
  get(id: string): LiveEntry | undefined;
  delete(id: string): void;
  entries(): IterableIterator<[string, LiveEntry]>;
}

export interface LiveEntry {
  pid: number;
  /** cgroup file (host path) → the value it showed after svcd set it. */
  cgroup: Record<string, string>;
  /** Targets inside the container that must stay mounted, and whether read-only. */
  mounts: Record<string, { readonly: boolean }>;
  /** Its nics: names inside (macvlan, physical) and host-side veths (bridged, p2p) that must stay there. */
  nics?: { inside: string[]; veths: string[] };
  /** Config keys and `devices.<name>` whose change waits for the next start. */
  pendingRestart: string[];
  /** Host nodes of `required=false` unix devices, and USB node directories (`dir/`): their changes are watched (hotplug). */
  hotplug?: string[];
  /** Proxy devices that must have a live forwarder (ensure-proxies.ts), for the drift observer. */
  proxies?: string[];
}

/** `onChange`: an entry set or deleted (the hotplug watcher follows the containers' optional nodes). */
export function createLiveRegistry(
  hooks: { onChange?(id: string, entry: LiveEntry | undefined): void } = {},
): LiveRegistry {
  const map = new Map<string, LiveEntry>();
  return {
    set: (id, e) => {
      map.set(id, e);
      hooks.onChange?.(id, e);
    },
    get: (id) => map.get(id),
    delete: (id) => {
      if (map.delete(id)) hooks.onChange?.(id, undefined);
    },
    entries: () => map.entries(),
  };
}

const norm = (target: string) => `/${target.replace(/^\/+/, '').replace(/\/+$/, '')}`;

interface WantedMount {
  device: string;
  mount: LiveMount;
  key: string;
  rule?: string;
}

/** The mounts the desired config wants in the container, by target. */
function wantedMounts(
  disks: readonly (LxcDiskMount & { device?: string })[],
  unix: readonly (LxcUnixDevice & { device?: string })[],
): Map<string, WantedMount> {
  const out = new Map<string, WantedMount>();
  for (const d of disks) {
    const mount: LiveMount = {
      source: d.source,
      target: norm(d.target),
      kind: d.kind,
      readonly: !!d.readonly,
      recursive: !!d.recursive,
      idmap: !!d.idmap,
      ...(d.propagation ? { propagation: d.propagation } : {}),
    };
    const key = JSON.stringify([
      'disk',
      mount.source,
      mount.kind,
      mount.readonly,
      mount.recursive,
      mount.idmap,
      mount.propagation ?? '',
    ]);
    out.set(mount.target, { device: d.device ?? mount.target, mount, key });
  }
  for (const u of unix) {
    const mount: LiveMount = { source: u.source, target: norm(u.target), kind: 'file' };
    const rule = deviceRuleOf(u);
    out.set(mount.target, {
      device: u.device ?? mount.target,
      mount,
      key: JSON.stringify(['unix', u.source, rule]),
      rule,
    });
  }
  return out;
}

export interface EnsureLiveInput {
  liveCgroups: LxcCgroupsAdapter;
  liveMounts: LxcMountsAdapter;
  liveNics: LxcNicsAdapter;
  /** Proxy devices' forwarders and nat rules (absent: proxy devices are refused). */
  proxy?: ProxyAdapter | undefined;
  host: HostFacts;
  c: ContainerRow;
  pid: number;
  /** The container was started by this reconcile, from the config just written: record, change nothing. */
  startedNow: boolean;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  limits: LxcLimits;
  /** The disks the config mounts (the devsvc mounts left out: those follow a restart). */
  disks: (LxcDiskMount & { device?: string })[];
  unixDevices: (LxcUnixDevice & { device?: string })[];
  /** Host paths to watch for hotplug (ensure-lxc-config.ts); the optional unix nodes of `devices` when absent. */
  hotplug?: string[];
  nics: readonly ResolvedNic[];
  /** Before a nic is attached live (its managed network must be ready): throws to wait. */
  beforeAttachNic(nic: ResolvedNic): Promise<void>;
  /** Started now: what its physical nics had on the host before LXC moved them in (ensure-live-nics.ts). */
  physicalWas?: Record<string, PhysicalState> | undefined;
  facts: { live?: LiveFacts | undefined };
  registry?: LiveRegistry | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Apply the live part of the config to the running container and record what it has. Returns whether the
 * facts changed (the caller writes them with the convergence). Host refusals (a memory limit the kernel
 * cannot reclaim down to, a mount the kernel refuses) are TerminalErrors naming the key or device.
 */
export async function ensureLive(input: EnsureLiveInput): Promise<boolean> {
  const { c, pid, host, liveCgroups: cgroups, liveMounts } = input;
  const view = restartViewOf(input.config, input.devices, host.cgroupVersion);
  const wanted = wantedMounts(input.disks, input.unixDevices);
  let changed = false;

  // cgroup limits: written where they differ (a fresh start has them from LXC: nothing to write).
  const cg = await cgroups.locateCgroups(pid);
  let cgroup: Record<string, string>;
  try {
    cgroup = cgroups.applyCgroupSettings(cg, cgroupSettingsOf(host.cgroupVersion, input.limits, !!host.swapAccounting));
  } catch (e) {
    if (e instanceof CgroupWriteError) throw new TerminalError(e.message, { cause: e });
    throw e;
  }

  let live = input.facts.live;
  if (input.startedNow || !live) {
    // Started now: LXC mounted everything the config names. Started before this svcd knew (no record):
    // what is mounted at a wanted target is taken as that device, and the start config as the current one.
    const present = input.startedNow ? undefined : liveMounts.readMounts(pid);
    const mounts: Record<string, LiveMountRecord> = {};
    for (const [t, w] of wanted)
      if (!present || present.has(t)) mounts[t] = { key: w.key, ...(w.rule ? { rule: w.rule } : {}) };
    live = { mounts, startedWith: view };
    input.facts.live = live;
    changed = true;
  }

  if (!input.startedNow) {
    const present = liveMounts.readMounts(pid);
    const fail = (device: string, what: string, e: unknown): never => {
      if (e instanceof MountHelperMissingError) throw new TerminalError(e.message, { cause: e });
      // A host command's own words (its stderr) when it has them.
      const why = terminalMessageOf(e);
      throw new TerminalError(`device "${device}": cannot ${what} the running container: ${why}`, { cause: e });
    };
    // Gone or changed: unmount (and take back its device access).
    for (const [target, rec] of Object.entries(live.mounts)) {
      const w = wanted.get(target);
      if (w && w.key === rec.key) continue;
      if (present.has(target))
        await liveMounts
          .detachMount(pid, target, { removeFile: !!rec.rule, signal: input.signal })
          .catch((e: unknown) => fail(target, `unmount ${target} from`, e));
      // Its device access goes with it, unless every container has it (/dev/null ...) or another device still needs it.
      const stillWanted = [...wanted.values()].some((x) => x.rule === rec.rule);
      if (
        rec.rule &&
        host.cgroupVersion === 1 &&
        !stillWanted &&
        !deviceRuleCovered(rec.rule, cgroups.baseAllowedDevices())
      ) {
        try {
          cgroups.setDeviceAccess(cg, rec.rule, false);
        } catch (e) {
          fail(target, 'deny the device in', e);
        }
      }
      delete live.mounts[target];
      present.delete(target);
      changed = true;
    }
    // Wanted and missing (never mounted, or unmounted behind svcd's back), or mounted with other options: mount.
    for (const [target, w] of wanted) {
      const rec = live.mounts[target];
      const seen = present.get(target);
      if (rec && rec.key === w.key && seen && seen.readonly === !!w.mount.readonly) continue;
      if (seen)
        await liveMounts
          .detachMount(pid, target, { signal: input.signal })
          .catch((e: unknown) => fail(w.device, `unmount ${target} from`, e));
      if (w.rule) {
        try {
          cgroups.setDeviceAccess(cg, w.rule, true);
        } catch (e) {
          fail(w.device, 'allow the device in', e);
        }
      }
      await liveMounts
        .attachMount(pid, w.mount, input.signal)
        .catch((e: unknown) => fail(w.device, `mount ${target} into`, e));
      live.mounts[target] = { key: w.key, ...(w.rule ? { rule: w.rule } : {}) };
      changed = true;
    }
  }

  const nics = await ensureLiveNics({
    lxc: input.liveNics,
    pid,
    startedNow: input.startedNow,
    nics: input.nics,
    records: live.nics,
    beforeAttach: input.beforeAttachNic,
    physicalWas: input.physicalWas,
    signal: input.signal,
  });
  if (nics.changed) {
    live.nics = nics.records;
    changed = true;
  }

  const proxies = await ensureProxies({
    proxy: input.proxy,
    containerId: c.id,
    pid,
    devices: input.devices,
    nics: input.nics,
    natKey: live.proxyNat,
    signal: input.signal,
  });
  if (proxies.natKey !== (live.proxyNat ?? '')) {
    if (proxies.natKey) live.proxyNat = proxies.natKey;
    else delete live.proxyNat;
    changed = true;
  }

  input.registry?.set(c.id, {
    pid,
    cgroup,
    mounts: Object.fromEntries(
      [...wanted].filter(([t]) => live!.mounts[t]).map(([t, w]) => [t, { readonly: !!w.mount.readonly }]),
    ),
    pendingRestart: pendingRestartOf(live.startedWith, view),
    hotplug: input.hotplug ?? hotplugSourcesOf(input.devices),
    ...(proxies.forwarders.length ? { proxies: proxies.forwarders } : {}),
    nics: nicNamesOf(live.nics),
  });
  return changed;
}
