import { containersOfEvent, cpuPercent } from '../view/format.ts';
import { containerPath, get } from './api.ts';
import { onEvent } from './events.ts';

export interface ContainerState {
  status: string;
  status_code: number;
  cpu?: { usage: number };
  memory?: { usage: number };
  network?: Record<
    string,
    {
      addresses?: { family: string; address: string; scope: string }[];
      hwaddr?: string;
      host_name?: string;
      state?: string;
    }
  > | null;
  pid?: number;
  pending_restart?: string[];
}

export interface Container {
  name: string;
  status: string;
  status_code: number;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  expanded_config: Record<string, string>;
  expanded_devices: Record<string, Record<string, string>>;
  profiles: string[];
  created_at: string;
  last_used_at: string;
  state?: ContainerState | null;
}

export interface Convergence {
  name: string;
  desired: string;
  generation: number;
  observed_generation: number;
  convergence: 'converged' | 'converging' | 'failed';
  error: string;
  terminal: boolean;
}

export interface Row {
  c: Container;
  conv: Convergence | undefined;
  cpu: number | undefined;
  /** Bumped at each change of the row: rows compare it to skip re-rendering. */
  rev: number;
}

const rows = new Map<string, Row>();
const samples = new Map<string, { usageNs: number; atMs: number }>();
const subscribers = new Set<() => void>();
let loaded = false;
let loadError = '';
let rev = 0;

function put(c: Container, conv: Convergence | undefined): void {
  const usageNs = c.state?.cpu?.usage ?? 0;
  const now = performance.now();
  const prev = samples.get(c.name);
  const cpu = c.state?.status === 'Running' ? cpuPercent(prev, { usageNs, atMs: now }) : undefined;
  if (!prev || now - prev.atMs > 1500) samples.set(c.name, { usageNs, atMs: now });
  const old = rows.get(c.name);
  rows.set(c.name, {
    c,
    conv: conv ?? old?.conv,
    cpu: cpu ?? (c.state?.status === 'Running' ? old?.cpu : undefined),
    rev: ++rev,
  });
}

function changed(): void {
  for (const s of subscribers) s();
}

/** The whole list: every container with its state (recursion=2), and every convergence verdict. */
export async function loadAll(): Promise<void> {
  const [list, conv] = await Promise.all([
    get<Container[]>('/1.0/containers?recursion=2'),
    get<Convergence[]>('/ui/api/convergence'),
  ]);
  if (!list.ok) {
    loadError = list.error;
    changed();
    return;
  }
  loadError = '';
  const byName = new Map((conv.ok ? conv.data : []).map((v) => [v.name, v]));
  const seen = new Set<string>();
  for (const c of list.data) {
    seen.add(c.name);
    put(c, byName.get(c.name));
  }
  for (const name of [...rows.keys()]) if (!seen.has(name)) rows.delete(name);
  loaded = true;
  changed();
}

/** One container again, after an event about it (gone: its row goes). */
export async function loadOne(name: string): Promise<void> {
  const [c, state, conv] = await Promise.all([
    get<Container>(containerPath(name)),
    get<ContainerState>(containerPath(name, '/state')),
    get<Convergence[]>('/ui/api/convergence'),
  ]);
  if (c.status === 404) rows.delete(name);
  else if (c.ok) {
    const byName = new Map((conv.ok ? conv.data : []).map((v) => [v.name, v]));
    put({ ...c.data, state: state.ok ? state.data : null }, byName.get(name));
    // A convergence verdict of another container may have moved too: keep theirs fresh as well.
    for (const [n, v] of byName) {
      const r = rows.get(n);
      if (r && n !== name && JSON.stringify(r.conv) !== JSON.stringify(v)) rows.set(n, { ...r, conv: v, rev: ++rev });
    }
  }
  changed();
}

const pending = new Map<string, ReturnType<typeof setTimeout>>();
/** Refresh a container soon, once for a burst of events about it. */
function refreshSoon(name: string): void {
  if (pending.has(name)) return;
  pending.set(
    name,
    setTimeout(() => {
      pending.delete(name);
      void loadOne(name);
    }, 150),
  );
}

let started = false;
/** Load, follow the event stream, and poll every 5 s for CPU and memory use (which no event reports). */
export function startContainers(): void {
  if (started) return;
  started = true;
  void loadAll();
  onEvent((ev) => {
    for (const name of containersOfEvent(ev)) refreshSoon(name);
  });
  setInterval(() => {
    if (document.visibilityState === 'visible') void loadAll();
  }, 5000);
}

export function subscribe(f: () => void): () => void {
  subscribers.add(f);
  return () => subscribers.delete(f);
}

export const snapshot = () => ({
  rows: [...rows.values()].sort((a, b) => a.c.name.localeCompare(b.c.name)),
  loaded,
  loadError,
});
export const rowOf = (name: string) => rows.get(name);
