import type { ConfigEntry, DeviceEntry, SnapshotEntry } from '../host/migration/migration-codec.ts';

/** LXD's numeric architecture ids (shared/osarch), which the Snapshot message carries instead of names. */
const ARCH_IDS: Record<string, number> = {
  i686: 1,
  x86_64: 2,
  armv7l: 3,
  aarch64: 4,
  ppc: 5,
  ppc64: 6,
  ppc64le: 7,
  s390x: 8,
  mips: 9,
  mips64: 10,
  riscv32: 11,
  riscv64: 12,
  armv6l: 13,
  armv8l: 14,
};
const ARCH_NAMES = Object.fromEntries(Object.entries(ARCH_IDS).map(([k, v]) => [v, k]));

export const architectureId = (name: string): number => ARCH_IDS[name] ?? 0;
export const architectureName = (id: number, fallback: string): string => ARCH_NAMES[id] ?? fallback;

export interface WireSnapshot {
  name: string;
  architecture: string;
  ephemeral: boolean;
  profiles: string[];
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  createdAt: Date;
}

const entries = (m: Record<string, string>): ConfigEntry[] =>
  Object.entries(m)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, value]) => ({ key, value }));
const fromEntries = (list: ConfigEntry[] | undefined): Record<string, string> =>
  Object.fromEntries((list ?? []).map((e) => [e.key, e.value]));

/** One snapshot as the MigrationHeader lists it (dates in unix seconds; svcd keeps no expiry or last use). */
export function snapshotToWire(s: WireSnapshot): SnapshotEntry {
  const devices: DeviceEntry[] = Object.entries(s.devices)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, config]) => ({ name, config: entries(config) }));
  return {
    name: s.name,
    localConfig: entries(s.config),
    profiles: [...s.profiles],
    ephemeral: s.ephemeral,
    localDevices: devices,
    architecture: architectureId(s.architecture),
    stateful: false,
    creationDate: Math.floor(s.createdAt.getTime() / 1000),
    lastUsedDate: 0,
    expiryDate: 0,
  };
}

/** A received snapshot; a missing or zero creation date is "now", as LXD's zero time is no date. */
export function snapshotFromWire(e: SnapshotEntry, fallbackArch: string, now: Date): WireSnapshot {
  const created = e.creationDate && e.creationDate > 0 ? new Date(e.creationDate * 1000) : now;
  return {
    name: e.name,
    architecture: architectureName(e.architecture, fallbackArch),
    ephemeral: e.ephemeral,
    profiles: e.profiles ?? [],
    config: fromEntries(e.localConfig),
    devices: Object.fromEntries((e.localDevices ?? []).map((d) => [d.name, fromEntries(d.config)])),
    createdAt: created,
  };
}
