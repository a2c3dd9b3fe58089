import type { DeviceMap, Kind, StringMap } from './document.ts';

/**
 * Config keys the server fills in by itself: when the document does not name them, they are the
 * server's, neither drift nor something an update removes (it sends them back unchanged).
 */
export function serverOwnedKey(kind: Kind, key: string): boolean {
  if (key.startsWith('volatile.')) return true;
  switch (kind) {
    case 'container':
      return key.startsWith('image.');
    case 'storage_pool':
      return key === 'source' || key === 'size';
    case 'network':
      return /^ipv[46]\.(address|nat)$/.test(key);
    case 'project':
      return key.startsWith('features.');
    case 'storage_volume':
      // LXD's block-backed drivers fill in the volume's filesystem and mount options.
      return key.startsWith('block.');
    default:
      return false;
  }
}

/** Equal for the purpose of a plan: a network's `auto` address is whatever subnet the server picked. */
function sameValue(kind: Kind, key: string, want: string, have: string | undefined): boolean {
  if (want === have) return true;
  if (kind === 'network' && want === 'auto' && /^ipv[46]\.address$/.test(key))
    return have !== undefined && have !== 'none' && have !== '';
  return false;
}

/**
 * The config keys that differ, as `config.<key>`. `exact`: the document owns the whole map (apply), so a
 * key the server has and the document lacks differs too, unless it is the server's own; otherwise only
 * the document's keys count (preseed).
 */
export function configChanges(kind: Kind, want: StringMap, have: StringMap, exact: boolean): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(want)) if (!sameValue(kind, k, v, have[k])) out.push(k);
  if (exact) for (const k of Object.keys(have)) if (!(k in want) && !serverOwnedKey(kind, k)) out.push(k);
  return out.sort().map((k) => `config.${k}`);
}

/** The config to send on an update: the document's keys over what the server keeps (its own keys; all of them for preseed). */
export function configToSend(kind: Kind, want: StringMap, have: StringMap, exact: boolean): StringMap {
  const kept = Object.fromEntries(Object.entries(have).filter(([k]) => !exact || serverOwnedKey(kind, k)));
  const out = { ...kept, ...want };
  // An `auto` address already resolved stays as the server picked it.
  for (const [k, v] of Object.entries(want)) if (sameValue(kind, k, v, have[k])) out[k] = have[k]!;
  return out;
}

const sameDevice = (a: StringMap | undefined, b: StringMap | undefined) => {
  if (!a || !b) return a === b;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};

/** The devices that differ, as `devices.<name>`; `exact` as for config. */
export function deviceChanges(want: DeviceMap, have: DeviceMap, exact: boolean): string[] {
  const names = new Set([...Object.keys(want), ...(exact ? Object.keys(have) : [])]);
  return [...names]
    .filter((n) => !sameDevice(want[n], have[n]))
    .sort()
    .map((n) => `devices.${n}`);
}

export const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);
