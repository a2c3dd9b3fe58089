/**
 * Which parts of a container's expanded config reach it while it runs, and which only at its next start.
 * Pure. The reconciler applies the live part to a running container (ensure-live.ts); for the rest it keeps
 * what the running container was started with and reports the difference as pending a restart.
 */
type Devices = Record<string, Record<string, string>>;

/** Config keys that a running container follows without a restart. */
const LIVE_EXACT = new Set([
  'limits.cpu',
  'limits.memory',
  'limits.memory.swap',
  'limits.processes',
  'security.protection.delete',
  'security.devsvc.images',
  'boot.autostart',
  'boot.autostart.delay',
  'boot.autostart.priority',
  'boot.host_shutdown_timeout',
  'boot.stop.priority',
  'images.compression_algorithm',
]);
/** environment.* is read by every new exec; user.* by the guest socket, live; image.* and volatile.* are records. */
const LIVE_PREFIXES = ['environment.', 'user.', 'image.', 'volatile.'];

export const isLiveConfigKey = (key: string) => LIVE_EXACT.has(key) || LIVE_PREFIXES.some((p) => key.startsWith(p));

/**
 * Whether a device is attached to and detached from a running container: disks other than the root disk,
 * nics, and unix-char/unix-block nodes (and the nodes of gpu/usb/infiniband devices) where the device cgroup can be changed in place (cgroup v1).
 */
export function isLiveDevice(d: Record<string, string>, cgroupVersion: 1 | 2): boolean {
  if (d.type === 'disk') return d.path !== '/';
  if (d.type === 'nic') return true;
  if (
    d.type === 'unix-char' ||
    d.type === 'unix-block' ||
    d.type === 'gpu' ||
    d.type === 'usb' ||
    d.type === 'infiniband'
  )
    return cgroupVersion === 1;
  return false;
}

/** What a running container keeps from its start: the config keys and devices that need a restart to change. */
export interface RestartView {
  config: Record<string, string>;
  devices: Devices;
}

export function restartViewOf(config: Record<string, string>, devices: Devices, cgroupVersion: 1 | 2): RestartView {
  const c: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) if (!isLiveConfigKey(k)) c[k] = v;
  const d: Devices = {};
  for (const [name, dev] of Object.entries(devices)) {
    if (isLiveDevice(dev, cgroupVersion)) continue;
    // The root disk's size is a quota the storage driver changes in place.
    if (dev.type === 'disk' && dev.path === '/') {
      const { size: _size, ...rest } = dev;
      d[name] = rest;
    } else d[name] = dev;
  }
  return { config: c, devices: d };
}

const sameMap = (a: Record<string, string> | undefined, b: Record<string, string> | undefined) => {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b ?? {}).length && ka.every((k) => a![k] === b?.[k]);
};

/**
 * What differs between the view a container started with and the desired one: config keys by name,
 * devices as `devices.<name>`, in order. Empty when nothing waits for a restart.
 */
export function pendingRestartOf(started: RestartView, desired: RestartView): string[] {
  const out = new Set<string>();
  for (const k of new Set([...Object.keys(started.config), ...Object.keys(desired.config)])) {
    if (started.config[k] !== desired.config[k]) out.add(k);
  }
  for (const n of new Set([...Object.keys(started.devices), ...Object.keys(desired.devices)])) {
    if (!sameMap(started.devices[n], desired.devices[n])) out.add(`devices.${n}`);
  }
  return [...out].sort();
}
