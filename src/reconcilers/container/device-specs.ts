/**
 * Pure reading of expanded devices into what the reconciler resolves on the host: which disks are
 * host paths and which are custom volumes, NIC specs, unix device requests, and id mapping of device
 * node owners. Validation (src/desired/devices.ts) has already refused malformed devices; what is
 * left to refuse here depends on the host or on other objects.
 */
import { createHash } from 'node:crypto';
import type { ComputeIdmapInput } from '../../host/idmap/compute-idmap.ts';
import type { Range } from '../../host/idmap/types.ts';
import type { LxcDiskMount, LxcNic } from '../../host/lxc/types.ts';
import { nicTypeOf, type NicType } from '../../desired/devices-nic.ts';
import { parseBool } from '../../util/parse-bool.ts';

type Device = Record<string, string>;
type Devices = Record<string, Device>;

export const isTrue = (v: string | undefined) => parseBool(v);

/** The idmap settings of an expanded config (the host ranges and block index come from elsewhere). */
export function idmapSettingsOf(
  config: Record<string, string>,
): Pick<ComputeIdmapInput, 'privileged' | 'isolated' | 'size' | 'base' | 'rawIdmap'> {
  return {
    privileged: isTrue(config['security.privileged']),
    isolated: isTrue(config['security.idmap.isolated']),
    ...(config['security.idmap.size'] ? { size: Number(config['security.idmap.size']) } : {}),
    ...(config['security.idmap.base'] ? { base: Number(config['security.idmap.base']) } : {}),
    ...(config['raw.id_map'] ? { rawIdmap: config['raw.id_map'] } : {}),
  };
}

/** A stable locally administered MAC for a NIC without `hwaddr` (LXD's 00:16:3e prefix), from the container id and device name. */
export function defaultHwaddr(containerId: string, device: string): string {
  const h = createHash('sha256').update(`${containerId}/${device}`).digest();
  return ['00', '16', '3e', ...[h[0]!, h[1]!, h[2]!].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** A stable host-side veth name for a nic without `host_name`: `veth` + 8 hex digits from the container id and device. */
export function defaultHostName(containerId: string, device: string): string {
  return `veth${createHash('sha256').update(`${containerId}/${device}/host`).digest('hex').slice(0, 8)}`;
}

/** LXD's bit rates (`10Mbit`, `100kbit`, a bare number is bit/s) in bit/s; decimal multiples as LXD's. */
export function parseBitRate(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(bit|kbit|Mbit|Gbit|Tbit)?$/.exec(v);
  if (!m) throw new Error(`bad bit rate "${v}"`);
  const unit = { bit: 1, kbit: 1e3, Mbit: 1e6, Gbit: 1e9, Tbit: 1e12 }[(m[2] ?? 'bit') as 'bit'];
  return Math.round(Number(m[1]) * unit);
}

const cidrs = (v: string | undefined) =>
  v
    ? v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
    : [];

/** One nic as the reconciler carries it out: the LXC veth, and what svcd adds on the host around it. */
export interface NicSpec extends LxcNic {
  device: string;
  nictype: NicType;
  hwaddr: string;
  hostName: string;
  /** Static addresses (a managed network's static DHCP lease). */
  ipv4?: string;
  ipv6?: string;
  /** `ipv4.routes` / `ipv6.routes`: host routes via the static address. */
  routes: string[];
  /** bit/s: `limits.ingress` (to the container), `limits.egress` (from it); `limits.max` sets both. */
  ingressBits?: number;
  egressBits?: number;
  macFiltering: boolean;
}

/** An infiniband device whose interface is moved into the container (nictype=physical). */
const isInfinibandNic = (d: Record<string, string>) => d.type === 'infiniband' && d.nictype === 'physical';

/**
 * The NICs (device order by name, so `lxc.net.N` numbering is stable); `parent` (or `network`) is checked
 * on the host by the caller. MAC: `hwaddr`, else the `volatile.<device>.hwaddr` svcd generated, else a
 * stable default; host side: `host_name`, else a stable default.
 */
export function nicsOf(devices: Devices, containerId: string, config: Record<string, string> = {}): NicSpec[] {
  return Object.entries(devices)
    .filter(([, d]) => d.type === 'nic' || isInfinibandNic(d))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([device, d]) => {
      // An infiniband device with nictype=physical: its IPoIB interface moves in like a physical nic (its
      // nodes are passed through by resolve-hw-devices.ts).
      const nictype = d.type === 'infiniband' ? 'physical' : nicTypeOf(d);
      const max = d['limits.max'];
      const ingress = max ?? d['limits.ingress'];
      const egress = max ?? d['limits.egress'];
      // A physical nic keeps its own MAC unless `hwaddr` is given; its host name is its parent's.
      const physical = nictype === 'physical';
      return {
        device,
        nictype,
        name: d.name ?? device,
        parent: nictype === 'p2p' ? '' : (d.network ?? d.parent ?? ''),
        hwaddr: (
          d.hwaddr ?? (physical ? '' : (config[`volatile.${device}.hwaddr`] ?? defaultHwaddr(containerId, device)))
        ).toLowerCase(),
        ...(d.mtu ? { mtu: Number(d.mtu) } : {}),
        hostName: physical ? (d.parent ?? '') : (d.host_name ?? defaultHostName(containerId, device)),
        ...(d['ipv4.address'] ? { ipv4: d['ipv4.address'] } : {}),
        ...(d['ipv6.address'] ? { ipv6: d['ipv6.address'] } : {}),
        routes: [...cidrs(d['ipv4.routes']), ...cidrs(d['ipv6.routes'])],
        ...(ingress ? { ingressBits: parseBitRate(ingress) } : {}),
        ...(egress ? { egressBits: parseBitRate(egress) } : {}),
        macFiltering: isTrue(d['security.mac_filtering']),
      };
    });
}

type MountOptions = Pick<LxcDiskMount, 'readonly' | 'recursive' | 'propagation'> & { target: string };

/** A non-root disk: a host path, or a custom volume on a pool (`pool` + `source` = volume name). */
export type DiskRequest =
  | ({ device: string; kind: 'host'; source: string; optional: boolean; shift: boolean } & MountOptions)
  | ({ device: string; kind: 'volume'; pool: string; volume: string } & MountOptions);

export function diskRequestsOf(devices: Devices): DiskRequest[] {
  const out: DiskRequest[] = [];
  for (const [device, d] of Object.entries(devices)) {
    if (d.type !== 'disk' || d.path === '/' || !d.path || !d.source) continue;
    const opts: MountOptions = {
      target: d.path,
      readonly: isTrue(d.readonly),
      recursive: isTrue(d.recursive),
      ...(d.propagation ? { propagation: d.propagation as LxcDiskMount['propagation'] } : {}),
    };
    out.push(
      d.pool
        ? { device, kind: 'volume', pool: d.pool, volume: d.source, ...opts }
        : { device, kind: 'host', source: d.source, optional: isTrue(d.optional), shift: isTrue(d.shift), ...opts },
    );
  }
  return out;
}

export interface UnixDeviceRequest {
  device: string;
  type: 'char' | 'block';
  /** Host node to take major/minor from (defaults to `target`). */
  source: string;
  /** Path inside the container (defaults to `source`). */
  target: string;
  major?: number;
  minor?: number;
  /** Owner and mode inside the container (LXD defaults: 0, 0, 0660). */
  uid: number;
  gid: number;
  mode: number;
  required: boolean;
}

export function unixDeviceRequestsOf(devices: Devices): UnixDeviceRequest[] {
  const out: UnixDeviceRequest[] = [];
  for (const [device, d] of Object.entries(devices)) {
    if (d.type !== 'unix-char' && d.type !== 'unix-block') continue;
    const source = d.source ?? d.path ?? '';
    const target = d.path ?? d.source ?? '';
    out.push({
      device,
      type: d.type === 'unix-char' ? 'char' : 'block',
      source,
      target,
      ...(d.major !== undefined && d.major !== '' ? { major: Number(d.major) } : {}),
      ...(d.minor !== undefined && d.minor !== '' ? { minor: Number(d.minor) } : {}),
      uid: d.uid ? Number(d.uid) : 0,
      gid: d.gid ? Number(d.gid) : 0,
      mode: d.mode ? parseInt(d.mode, 8) : 0o660,
      required: d.required === undefined || d.required === '' ? true : isTrue(d.required),
    });
  }
  return out;
}

/** Host nodes whose appearing or going changes the container (hotplug): optional unix devices taking their numbers from the host. */
export function hotplugSourcesOf(devices: Devices): string[] {
  return unixDeviceRequestsOf(devices)
    .filter((r) => !r.required && (r.major === undefined || r.minor === undefined))
    .map((r) => r.source)
    .sort();
}

/** The host id a container id maps to (identity when privileged: no ranges), or undefined when unmapped. */
export function hostIdOf(ranges: readonly Range[] | undefined, nsid: number): number | undefined {
  if (!ranges || ranges.length === 0) return nsid;
  const r = ranges.find((x) => nsid >= x.nsid && nsid < x.nsid + x.count);
  return r ? r.hostid + (nsid - r.nsid) : undefined;
}

/** File name (in the container's devices directory) of a unix device's node; device names are unique and path-safe. */
export const deviceNodeFileName = (device: string) => `unix.${device}`;

/**
 * The first map range whose host ids are not inside root's delegated ranges, or undefined. LXC writes
 * the maps through newuidmap/newgidmap, which refuse such ranges, unless the map includes host id 0
 * (then LXC writes it directly and nothing is checked).
 */
export function undelegatedRange(
  ranges: readonly Range[],
  delegated: readonly { start: number; count: number }[],
): Range | undefined {
  if (ranges.some((r) => r.hostid === 0)) return undefined;
  return ranges.find((r) => !delegated.some((d) => r.hostid >= d.start && r.hostid + r.count <= d.start + d.count));
}
