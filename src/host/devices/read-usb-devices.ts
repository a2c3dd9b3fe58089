import path from 'node:path';
import { listDir, readAttr, readDevNumbers, type SysfsNode, type SysfsRoots } from './sysfs-roots.ts';
import { readDeviceNode } from './read-device-node.ts';

/** One USB device (not an interface) of `/sys/bus/usb/devices`, with its node /dev/bus/usb/BBB/DDD. */
export interface UsbDevice {
  name: string;
  vendorid: string;
  productid: string;
  node: SysfsNode;
}

const pad = (v: string) => v.padStart(3, '0');

/** The host's USB devices; none without /sys/bus/usb. */
export async function readUsbDevices(roots: SysfsRoots): Promise<UsbDevice[]> {
  const dir = path.join(roots.sysRoot, 'bus', 'usb', 'devices');
  const out: UsbDevice[] = [];
  for (const name of (await listDir(dir)).sort()) {
    if (name.includes(':')) continue; // an interface of a device
    const at = (f: string) => readAttr(path.join(dir, name, f));
    const [vendorid, productid, busnum, devnum] = await Promise.all([
      at('idVendor'),
      at('idProduct'),
      at('busnum'),
      at('devnum'),
    ]);
    const numbers = await readDevNumbers(path.join(dir, name, 'dev'));
    if (!vendorid || !productid || !busnum || !devnum || !numbers) continue;
    out.push({
      name,
      vendorid: vendorid.toLowerCase(),
      productid: productid.toLowerCase(),
      node: { path: path.join(roots.devRoot, 'bus', 'usb', pad(busnum), pad(devnum)), ...numbers },
    });
  }
  return out;
}

/**
 * Whether a USB device's node is on the host with its sysfs numbers. Its appearing is what a hotplug watch
 * sees (devtmpfs creates it after sysfs has the device, and removes it before sysfs drops it), so a device
 * counts as plugged only with it.
 */
export async function hasUsbNode(u: UsbDevice): Promise<boolean> {
  const n = await readDeviceNode(u.node.path).catch(() => undefined);
  return n?.type === 'char' && n.major === u.node.major && n.minor === u.node.minor;
}

/**
 * What a hotplug watch of USB devices follows, without polling: every entry of /dev/bus/usb (buses coming)
 * and of each bus directory there (device nodes coming and going). Paths ending in `/` (watch-device-paths.ts).
 */
export async function usbWatchPaths(roots: SysfsRoots): Promise<string[]> {
  const top = path.join(roots.devRoot, 'bus', 'usb');
  const buses = (await listDir(top)).filter((b) => /^\d{3}$/.test(b)).sort();
  return [`${top}/`, ...buses.map((b) => `${path.join(top, b)}/`)];
}
