/**
 * gpu, usb and infiniband devices matched against the host's sysfs and passed through as unix-char devices (a
 * node svcd creates with the matched numbers, bind-mounted at the host path, allowed in the device cgroup:
 * ensure-unix-devices.ts). A device that matches nothing is a TerminalError naming what is missing, never a
 * container that silently lacks it. An infiniband device's interface is moved in as a physical nic.
 *
 * usb devices are hotplugged, as LXD's: `required` defaults to false, and such a device is passed through
 * while it is plugged (its sysfs entry and its /dev/bus/usb node both there), the container running with
 * or without it; the USB node directories are watched (`watch`) so that plugging reconciles the container.
 */
import path from 'node:path';
import { parseBool } from '../../util/parse-bool.ts';
import type { IbPort } from '../../host/devices/read-infiniband.ts';
import type { SysfsNode, SysfsRoots } from '../../host/devices/sysfs-roots.ts';
import type { HostDevicesAdapter } from '../adapters.ts';
import { TerminalError } from '../runtime/index.ts';
import type { UnixDeviceRequest } from './device-specs.ts';

type Device = Record<string, string>;

/** The InfiniBand port an infiniband device resolved to, and the interface it was resolved from (used only for that one). */
export type KnownIbPort = IbPort & { parent: string };

const normPci = (v: string) => (v.split(':').length === 2 ? `0000:${v}` : v).toLowerCase();

/** What a device asks for, for error messages: `vendorid=10de, pci=0000:01:00.0`, or `any`. */
function criteriaOf(dev: Device, keys: readonly string[]): string {
  const parts = keys.filter((k) => dev[k] !== undefined).map((k) => `${k}=${dev[k]}`);
  return parts.length ? parts.join(', ') : 'any';
}

/** A matched host node as a unix-char request: the same path inside as on the host. */
function passThrough(device: string, dev: Device, node: SysfsNode, roots: SysfsRoots): UnixDeviceRequest {
  const target = path.join('/dev', path.relative(roots.devRoot, node.path));
  return {
    device: `${device}.${path.relative(roots.devRoot, node.path).replaceAll('/', '-')}`,
    type: 'char',
    source: node.path,
    target,
    major: node.major,
    minor: node.minor,
    uid: dev.uid ? Number(dev.uid) : 0,
    gid: dev.gid ? Number(dev.gid) : 0,
    mode: dev.mode ? parseInt(dev.mode, 8) : 0o660,
    required: true,
  };
}

async function gpuNodes(device: string, dev: Device, host: HostDevicesAdapter): Promise<SysfsNode[] | string> {
  const { roots } = host;
  const cards = await host.drmCards();
  const hit = cards.filter(
    (c) =>
      (dev.vendorid === undefined || c.vendorid === dev.vendorid.toLowerCase()) &&
      (dev.productid === undefined || c.productid === dev.productid.toLowerCase()) &&
      (dev.id === undefined || c.id === Number(dev.id)) &&
      (dev.pci === undefined || c.pci.toLowerCase() === normPci(dev.pci)),
  );
  if (hit.length) return hit.flatMap((c) => c.nodes);
  const found = cards.length
    ? `the host has ${cards.map((c) => `card${c.id} (${c.vendorid}:${c.productid} at ${c.pci})`).join(', ')}`
    : `the host has no GPU (no DRM card in ${path.join(roots.sysRoot, 'class', 'drm')})`;
  return `gpu "${device}": no GPU matches ${criteriaOf(dev, ['vendorid', 'productid', 'id', 'pci'])}: ${found}`;
}

/** The nodes of the USB devices `dev` matches; none (not an error) for a hotplugged one that is not plugged. */
async function usbNodes(device: string, dev: Device, host: HostDevicesAdapter): Promise<SysfsNode[] | string> {
  const { roots } = host;
  const all = await host.usbDevices();
  const required = parseBool(dev.required);
  let hit = all.filter(
    (u) =>
      (dev.vendorid === undefined || u.vendorid === dev.vendorid.toLowerCase()) &&
      (dev.productid === undefined || u.productid === dev.productid.toLowerCase()),
  );
  if (!required) {
    const plugged = await Promise.all(hit.map((u) => host.hasUsbNode(u)));
    hit = hit.filter((_, i) => plugged[i]);
    return hit.map((u) => u.node);
  }
  if (hit.length) return hit.map((u) => u.node);
  const found = all.length
    ? `the host has ${all.map((u) => `${u.vendorid}:${u.productid}`).join(', ')}`
    : `the host has no USB device (none in ${path.join(roots.sysRoot, 'bus', 'usb', 'devices')})`;
  return `usb "${device}": required, but no USB device matches ${criteriaOf(dev, ['vendorid', 'productid'])}: ${found}`;
}

/**
 * An infiniband device with nictype=physical: the IPoIB interface `parent` is moved in like a physical nic
 * (resolve-nics.ts), and the nodes of its port are passed through: the device's verbs node (0666, as hosts
 * have it) and the port's umad and issm (0600). While the interface is in the running container the host no
 * longer shows which device it belongs to: `known` (recorded at the last resolution, of the same `parent`) says it.
 */
async function infinibandNodes(
  device: string,
  dev: Device,
  host: HostDevicesAdapter,
  known: KnownIbPort | undefined,
): Promise<{ requests: UnixDeviceRequest[]; port: KnownIbPort } | string> {
  const { roots } = host;
  if (!(await host.hasInfiniband()))
    return `infiniband "${device}": the host has no InfiniBand device (${path.join(roots.sysRoot, 'class', 'infiniband')} is missing or empty)`;
  if (dev.nictype === 'sriov')
    return `infiniband "${device}": nictype=sriov is not supported by svcd (it does not allot virtual functions); use nictype=physical`;
  const port =
    (await host.ibPortOf(dev.parent ?? '')) ??
    (known && known.parent === dev.parent ? { ibdev: known.ibdev, port: known.port } : undefined);
  if (!port)
    return `infiniband "${device}": host interface "${dev.parent}" is not an InfiniBand interface (or does not exist)`;
  const { verbs, mad } = await host.ibNodes(port);
  if (verbs.length === 0)
    return `infiniband "${device}": ${port.ibdev} has no verbs device in ${path.join(roots.sysRoot, 'class', 'infiniband_verbs')} (is the ib_uverbs module loaded?)`;
  const requests = [
    ...verbs.map((n) => passThrough(device, { mode: '0666' }, n, roots)),
    ...mad.map((n) => passThrough(device, { mode: '0600' }, n, roots)),
  ];
  return { requests, port: { ...port, parent: dev.parent! } };
}

/**
 * The unix-char requests passing the matched gpu, usb and infiniband nodes through, and the InfiniBand port
 * each infiniband device resolved to (to record: `known` next time), and the host paths to watch for usb
 * hotplug. `mustExist` false (the container is to stay stopped): what matches nothing is left out, and
 * looked for again at the start.
 */
export async function resolveHwDevices(input: {
  devices: Record<string, Device>;
  host: HostDevicesAdapter;
  mustExist: boolean;
  /** infiniband device → the port it resolved to before. */
  known?: Record<string, KnownIbPort> | undefined;
}): Promise<{ requests: UnixDeviceRequest[]; infiniband: Record<string, KnownIbPort>; watch: string[] }> {
  const requests: UnixDeviceRequest[] = [];
  const infiniband: Record<string, KnownIbPort> = {};
  for (const [device, dev] of Object.entries(input.devices).sort(([a], [b]) => (a < b ? -1 : 1))) {
    let found: SysfsNode[] | string;
    if (dev.type === 'gpu') found = await gpuNodes(device, dev, input.host);
    else if (dev.type === 'usb') found = await usbNodes(device, dev, input.host);
    else if (dev.type === 'infiniband') {
      const ib = await infinibandNodes(device, dev, input.host, input.known?.[device]);
      if (typeof ib === 'string') found = ib;
      else {
        requests.push(...ib.requests);
        infiniband[device] = ib.port;
        continue;
      }
    } else continue;
    if (typeof found === 'string') {
      if (input.mustExist) throw new TerminalError(found);
      continue;
    }
    requests.push(...found.map((n) => passThrough(device, dev, n, input.host.roots)));
  }
  const hotplug = Object.values(input.devices).some((d) => d.type === 'usb' && !parseBool(d.required));
  return { requests, infiniband, watch: hotplug ? await input.host.usbWatchPaths() : [] };
}
