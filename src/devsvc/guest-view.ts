import { parseBool } from '../util/parse-bool.ts';

/**
 * What a guest may see of its own container through devsvc, and how a change of it is told.
 * Pure: no database, no host.
 */

/** `security.devsvc` (default on): the guest socket is mounted and answers. */
export const devsvcEnabled = (config: Record<string, string>) => parseBool(config['security.devsvc'], true);

/** `security.devsvc.images` (default off): the guest may download public or cached images. */
export const devsvcImagesEnabled = (config: Record<string, string>) =>
  parseBool(config['security.devsvc.images'], false);

/** Only the `user.*` namespace is exported to the guest; nothing is writable from inside. */
export const isGuestKey = (key: string) => key.startsWith('user.');

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The guest-visible config keys (sorted). */
export function guestConfigOf(config: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(config)
      .filter(([k]) => isGuestKey(k))
      .sort(([a], [b]) => byName(a, b)),
  );
}

/** cloud-init style meta-data: instance id and hostname are the container's name, then `user.meta-data`. */
export function renderMetaData(name: string, config: Record<string, string>): string {
  const extra = config['user.meta-data'];
  return `#cloud-config\ninstance-id: ${name}\nlocal-hostname: ${name}\n${extra ? (extra.endsWith('\n') ? extra : `${extra}\n`) : ''}`;
}

export interface GuestView {
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

export type GuestEventType = 'config' | 'device';
export const GUEST_EVENT_TYPES: readonly GuestEventType[] = ['config', 'device'];

export interface GuestChange {
  type: GuestEventType;
  metadata: Record<string, unknown>;
}

const sameDevice = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};

/**
 * What changed between two views, as devsvc events: `config` {key, old_value, value} for each
 * `user.*` key whose value changed ("" for absent), `device` {action added|removed|updated, name,
 * config} for each device (the old config when removed, the new one otherwise).
 */
export function guestChanges(prev: GuestView, next: GuestView): GuestChange[] {
  const out: GuestChange[] = [];
  const pc = guestConfigOf(prev.config);
  const nc = guestConfigOf(next.config);
  for (const key of [...new Set([...Object.keys(pc), ...Object.keys(nc)])].sort(byName)) {
    if (pc[key] !== nc[key])
      out.push({ type: 'config', metadata: { key, old_value: pc[key] ?? '', value: nc[key] ?? '' } });
  }
  for (const name of [...new Set([...Object.keys(prev.devices), ...Object.keys(next.devices)])].sort(byName)) {
    const a = prev.devices[name];
    const b = next.devices[name];
    if (a && !b) out.push({ type: 'device', metadata: { action: 'removed', name, config: a } });
    else if (!a && b) out.push({ type: 'device', metadata: { action: 'added', name, config: b } });
    else if (a && b && !sameDevice(a, b))
      out.push({ type: 'device', metadata: { action: 'updated', name, config: b } });
  }
  return out;
}

/** Parse `?type=config,device`; empty = both. Returns an error text for unknown types. */
export function parseGuestEventTypes(raw: string | null | undefined): Set<GuestEventType> | string {
  const out = new Set<GuestEventType>();
  for (const t of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(GUEST_EVENT_TYPES as readonly string[]).includes(t))
      return `Unknown event type "${t}" (use ${GUEST_EVENT_TYPES.join(', ')})`;
    out.add(t as GuestEventType);
  }
  return out.size ? out : new Set(GUEST_EVENT_TYPES);
}
