import { containersOfEvent, cpuPercent } from '../view/format.ts';
import { withProject } from '../view/location.ts';
import { get } from './api.ts';
import { onEvent } from './events.ts';
import { currentProject } from './project.ts';

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
/** The project the rows are of: a read started for another one is dropped when it answers. */
let project = 'default';

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

/**
 * The whole list: every container (recursion=1, which the daemon keeps rendered), the state of the
 * running ones (recursion=2 filtered: reading a stopped container's state tells nothing), and every
 * convergence verdict.
 */
export async function loadAll(): Promise<void> {
  const p = project;
  const [list, live, conv] = await Promise.all([
    get<Container[]>(withProject('/1.0/containers?recursion=1', p)),
    get<Container[]>(withProject(`/1.0/containers?recursion=2&filter=${encodeURIComponent('status ne Stopped')}`, p)),
    get<Convergence[]>(withProject('/ui/api/convergence', p)),
  ]);
  if (p !== project) return;
  // The test of 1,000 rows measures rendering from here (the data is in) to the rows in the document.
  performance.mark('svcd-containers-data');
  if (!list.ok) {
    loadError = list.error;
    changed();
    return;
  }
  loadError = '';
  const byName = new Map((conv.ok ? conv.data : []).map((v) => [v.name, v]));
  const states = new Map((live.ok ? live.data : []).map((c) => [c.name, c.state]));
  const seen = new Set<string>();
  for (const c of list.data) {
    seen.add(c.name);
    put({ ...c, state: states.get(c.name) ?? { status: c.status, status_code: c.status_code } }, byName.get(c.name));
  }
  for (const name of [...rows.keys()]) if (!seen.has(name)) rows.delete(name);
  loaded = true;
  changed();
}

/** One container again, after an event about it; a filtered list, so a deleted one is an empty answer, not a 404. */
export async function loadOne(name: string): Promise<void> {
  const p = project;
  const filter = encodeURIComponent(`name eq ${JSON.stringify(name)}`);
  const [list, conv] = await Promise.all([
    get<Container[]>(withProject(`/1.0/containers?recursion=2&filter=${filter}`, p)),
    get<Convergence[]>(withProject(`/ui/api/convergence?name=${encodeURIComponent(name)}`, p)),
  ]);
  if (!list.ok || p !== project) return;
  const c = list.data.find((x) => x.name === name);
  if (!c) rows.delete(name);
  else put(c, conv.ok ? conv.data[0] : undefined);
  changed();
}

const STATUS_AFTER: Record<string, string> = {
  'container-stopped': 'Stopped',
  'container-shutdown': 'Stopped',
  'container-started': 'Running',
  'container-restarted': 'Running',
  'container-paused': 'Frozen',
  'container-resumed': 'Running',
};

function showStatus(name: string, status: string): void {
  const r = rows.get(name);
  if (!r || r.c.status === status) return;
  const state = r.c.state ? { ...r.c.state, status } : r.c.state;
  rows.set(name, { ...r, c: { ...r.c, status, state }, rev: ++rev });
  changed();
}

// Events come in bursts (a thousand creates): the names are gathered for 150 ms, then read one by one
// when few, or all at once with the list when many, so the browser's few connections are never flooded.
const pending = new Set<string>();
let flushing = false;
let listing: Promise<void> | undefined;
let listAgain = false;

/** loadAll, one at a time: a call while one runs makes one more run after it. */
function reloadAll(): Promise<void> {
  if (listing) {
    listAgain = true;
    return listing;
  }
  listing = loadAll().finally(() => {
    listing = undefined;
    if (listAgain) {
      listAgain = false;
      void reloadAll();
    }
  });
  return listing;
}

function refreshSoon(name: string): void {
  pending.add(name);
  if (flushing) return;
  flushing = true;
  setTimeout(() => {
    flushing = false;
    const names = [...pending];
    pending.clear();
    if (names.length > 8) void reloadAll();
    else for (const n of names) void loadOne(n);
  }, 150);
}

let started = false;
/**
 * Load the URL's project, follow the event stream, and poll every 5 s for CPU and memory use (which no
 * event reports). Called again after the project changed, it starts over with the other one's rows.
 */
export function startContainers(): void {
  if (started && project === currentProject()) return;
  project = currentProject();
  if (started) {
    rows.clear();
    samples.clear();
    loaded = false;
    loadError = '';
    changed();
    void reloadAll();
    return;
  }
  started = true;
  void reloadAll();
  onEvent((ev) => {
    // The stream tells of every project; a container of another one may have the same name.
    if (ev.project !== undefined && ev.project !== project) return;
    const names = containersOfEvent(ev);
    // A lifecycle event says what the host did (the observer's word, also for what happened behind svcd's
    // back): the row shows it at once, and the read that follows fills in the rest.
    const action = ev.type === 'lifecycle' ? (ev.metadata as { action?: string }).action : undefined;
    const status = action ? STATUS_AFTER[action] : undefined;
    if (status) for (const name of names) showStatus(name, status);
    // A rename names one of the two names: the list tells both.
    if (action === 'container-renamed') void reloadAll();
    if (action === 'container-deleted') {
      for (const name of names) rows.delete(name);
      changed();
      return;
    }
    for (const name of names) refreshSoon(name);
  });
  setInterval(() => {
    if (document.visibilityState === 'visible') void reloadAll();
  }, 5000);
}

export function subscribe(f: () => void): () => void {
  subscribers.add(f);
  return () => subscribers.delete(f);
}

/** The rows are of the URL's project (a page of a project just chosen renders before startContainers() runs). */
const current = () => project === currentProject();

export const snapshot = () => ({
  rows: current() ? [...rows.values()].sort((a, b) => (a.c.name < b.c.name ? -1 : a.c.name > b.c.name ? 1 : 0)) : [],
  loaded: loaded && current(),
  loadError: current() ? loadError : '',
});
export const rowOf = (name: string) => (current() ? rows.get(name) : undefined);
