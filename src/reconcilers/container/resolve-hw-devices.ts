/**
 * gpu and usb devices matched against the host's sysfs and passed through as unix-char devices (a node
 * svcd creates with the matched numbers, bind-mounted at the host path, allowed in the device cgroup:
 * ensure-unix-devices.ts). A device that matches nothing is a TerminalError naming what is missing, never a
 * container that silently lacks it; infiniband is refused (moving InfiniBand interfaces is not implemented).
 */
import path from 'node:path';
import { readDrmCards } from '../../host/devices/read-drm-cards.ts';
import { readUsbDevices } from '../../host/devices/read-usb-devices.ts';
import { listDir, type SysfsNode, type SysfsRoots } from '../../host/devices/sysfs-roots.ts';
import { TerminalError } from '../runtime/index.ts';
import type { UnixDeviceRequest } from './device-specs.ts';

type Device = Record<string, string>;

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

async function gpuNodes(device: string, dev: Device, roots: SysfsRoots): Promise<SysfsNode[] | string> {
  const cards = await readDrmCards(roots);
  const hit = cards.filter(
    (c) =>
      (dev.vendorid === undefined || c.vendorid === dev.vendorid.toLowerCase()) &&
      (dev.productid === undefined || c.productid === dev.productid.toLowerCase()) &&
      (dev.id === undefined || c.id === Number(dev.id)) &&
      (dev.pci === undefined || c.pci.toLowerCase() === normPci(dev.pci)),
  );
  if (hit.length) return hit.flatMap((c) => c.nodes);
  const found = cards.length ? `the host has ${cards.map((c) => `card${c.id} (${c.vendorid}:${c.productid} at ${c.pci})`).join(', ')}` : `the host has no GPU (no DRM card in ${path.join(roots.sysRoot, 'class', 'drm')})`;
  return `gpu "${device}": no GPU matches ${criteriaOf(dev, ['vendorid', 'productid', 'id', 'pci'])}: ${found}`;
}

async function usbNodes(device: string, dev: Device, roots: SysfsRoots): Promise<SysfsNode[] | string> {
  const all = await readUsbDevices(roots);
  const hit = all.filter((u) => (dev.vendorid === undefined || u.vendorid === dev.vendorid.toLowerCase()) && (dev.productid === undefined || u.productid === dev.productid.toLowerCase()));
  if (hit.length) return hit.map((u) => u.node);
  const found = all.length ? `the host has ${all.map((u) => `${u.vendorid}:${u.productid}`).join(', ')}` : `the host has no USB device (none in ${path.join(roots.sysRoot, 'bus', 'usb', 'devices')})`;
  return `usb "${device}": no USB device matches ${criteriaOf(dev, ['vendorid', 'productid'])}: ${found}`;
}

async function infinibandRefusal(device: string, dev: Device, roots: SysfsRoots): Promise<string> {
  const ib = path.join(roots.sysRoot, 'class', 'infiniband');
  if ((await listDir(ib)).length === 0) return `infiniband "${device}": the host has no InfiniBand device (${ib} is missing or empty)`;
  if ((await listDir(path.join(roots.sysRoot, 'class', 'net', dev.parent ?? '', 'device', 'infiniband'))).length === 0)
    return `infiniband "${device}": host interface "${dev.parent}" is not an InfiniBand interface (or does not exist)`;
  return `infiniband "${device}": passing InfiniBand interfaces into containers is not implemented by svcd`;
}

/**
 * The unix-char requests passing the matched gpu and usb nodes through. `mustExist` false (the container is
 * to stay stopped): what matches nothing is left out, and looked for again at the start.
 */
export async function resolveHwDevices(input: { devices: Record<string, Device>; roots: SysfsRoots; mustExist: boolean }): Promise<UnixDeviceRequest[]> {
  const out: UnixDeviceRequest[] = [];
  for (const [device, dev] of Object.entries(input.devices).sort(([a], [b]) => (a < b ? -1 : 1))) {
    let found: SysfsNode[] | string;
    if (dev.type === 'gpu') found = await gpuNodes(device, dev, input.roots);
    else if (dev.type === 'usb') found = await usbNodes(device, dev, input.roots);
    else if (dev.type === 'infiniband') found = await infinibandRefusal(device, dev, input.roots);
    else continue;
    if (typeof found === 'string') {
      if (input.mustExist) throw new TerminalError(found);
      continue;
    }
    out.push(...found.map((n) => passThrough(device, dev, n, input.roots)));
  }
  return out;
}
