import { configChanges, configToSend, deviceChanges, sameList } from './compare-objects.ts';
import {
  DocumentError,
  KIND_LABEL,
  KINDS,
  volumeKey,
  type ContainerDoc,
  type DeviceMap,
  type HostDoc,
  type Kind,
  type StringMap,
} from './document.ts';
import type { HostState } from './host-state.ts';

export interface PlanStep {
  action: 'create' | 'update' | 'delete';
  kind: Kind | 'server';
  /** The object's name; a volume's is `pool/name`. */
  name: string;
  /** What differs (updates): `config.<key>`, `devices.<name>`, `description`, `profiles`, `state`... */
  keys: string[];
  /** The POST body of a create, the PUT body of an update (PATCH for the server's config). */
  body?: Record<string, unknown>;
  /** Containers: the power state to reach once written. */
  state?: 'running' | 'stopped';
  /** Containers: the status the server reported (a delete stops a running one first). */
  status?: string;
}

export interface Plan {
  steps: PlanStep[];
}

export interface PlanOptions {
  /** `apply`: the document owns each object it names; `preseed`: it only adds keys and objects (`lxd init`). */
  mode: 'apply' | 'preseed';
  /** Also delete what the document does not name (never `default` profiles or projects, pools, unmanaged networks). */
  prune: boolean;
}

/** Any object of the document or the server, seen through the fields the plan compares. */
interface Named {
  name: string;
  pool?: string;
  driver?: string;
  type?: string;
  description?: string;
  config?: StringMap;
  devices?: DeviceMap;
  profiles?: string[];
  ephemeral?: boolean;
  source?: StringMap;
  state?: 'running' | 'stopped';
  status?: string;
  architecture?: string;
  managed?: boolean;
}

const keyOf = (kind: Kind, o: Named) =>
  kind === 'storage_volume' ? volumeKey(o as { pool: string; name: string }) : o.name;
const SECTION: Record<Kind, keyof HostDoc & keyof HostState> = {
  project: 'projects',
  storage_pool: 'storage_pools',
  network: 'networks',
  storage_volume: 'storage_volumes',
  profile: 'profiles',
  container: 'containers',
};

const wantedState = (c: ContainerDoc) => c.state ?? 'running';
/** A frozen container is neither: both states ask for an action. */
const stateOf = (status: string) => ({ Running: 'running', Stopped: 'stopped' })[status] ?? status.toLowerCase();

function createBody(kind: Kind, d: Named): Record<string, unknown> {
  const base = { name: d.name, description: d.description ?? '', config: d.config ?? {} };
  switch (kind) {
    case 'storage_pool':
      return { ...base, driver: d.driver };
    case 'network':
      return { ...base, ...(d.type ? { type: d.type } : {}) };
    case 'storage_volume':
      return { ...base, type: 'custom' };
    case 'profile':
      return { ...base, devices: d.devices ?? {} };
    case 'container':
      return {
        ...base,
        source: d.source ?? { type: 'none' },
        profiles: d.profiles ?? ['default'],
        devices: d.devices ?? {},
        ephemeral: d.ephemeral ?? false,
      };
    default:
      return base;
  }
}

/** An update of one object, or undefined when it already matches. */
function updateStep(kind: Kind, d: Named, c: Named, exact: boolean): PlanStep | undefined {
  const keys: string[] = [];
  const name = keyOf(kind, d as Named);
  if (kind === 'storage_pool' && d.driver !== c.driver)
    throw new DocumentError(`storage pool "${name}": key "driver" cannot change (${c.driver} on the server)`);
  if (kind === 'network' && d.type && c.type && d.type !== c.type)
    throw new DocumentError(`network "${name}": key "type" cannot change (${c.type} on the server)`);
  const description = d.description ?? (exact ? '' : (c.description ?? ''));
  if (description !== (c.description ?? '')) keys.push('description');
  keys.push(...configChanges(kind, d.config ?? {}, c.config ?? {}, exact));
  const body: Record<string, unknown> = {
    description,
    config: configToSend(kind, d.config ?? {}, c.config ?? {}, exact),
  };
  if (kind === 'profile' || kind === 'container') {
    keys.push(...deviceChanges(d.devices ?? {}, c.devices ?? {}, exact));
    body.devices = exact ? (d.devices ?? {}) : { ...c.devices, ...d.devices };
  }
  const step: PlanStep = { action: 'update', kind, name, keys, body };
  if (kind === 'container') {
    const profiles = d.profiles ?? (exact ? ['default'] : (c.profiles ?? []));
    if (!sameList(profiles, c.profiles ?? [])) keys.push('profiles');
    const ephemeral = d.ephemeral ?? (exact ? false : c.ephemeral);
    if (ephemeral !== (c.ephemeral ?? false)) keys.push('ephemeral');
    Object.assign(body, { architecture: c.architecture, profiles, ephemeral });
    step.status = c.status;
    if (wantedState(d as ContainerDoc) !== stateOf(c.status ?? '')) {
      keys.push('state');
      step.state = wantedState(d as ContainerDoc);
    }
    // A state change alone writes no object.
    if (keys.length === 1 && keys[0] === 'state') delete step.body;
  }
  return keys.length ? step : undefined;
}

/** What may be pruned: never the default profile or project, never a pool, never an unmanaged network. */
function prunable(kind: Kind, c: Named): boolean {
  if (kind === 'storage_pool') return false;
  if ((kind === 'profile' || kind === 'project') && c.name === 'default') return false;
  if (kind === 'network') return c.managed === true;
  return true;
}

function serverStep(want: StringMap | undefined, have: Record<string, unknown>): PlanStep | undefined {
  const changed: StringMap = {};
  for (const [k, v] of Object.entries(want ?? {})) {
    const cur = have[k];
    // Secrets come back as `true`: one that is set is left alone (its value cannot be compared).
    if (k === 'core.trust_password' && cur !== undefined && cur !== '' && cur !== false) continue;
    if ((cur === undefined ? '' : String(cur)) !== v) changed[k] = v;
  }
  const keys = Object.keys(changed).sort();
  return keys.length
    ? {
        action: 'update',
        kind: 'server',
        name: 'config',
        keys: keys.map((k) => `config.${k}`),
        body: { config: changed },
      }
    : undefined;
}

/**
 * The plan that makes `host` match `doc`, in the order it is carried out: the server's config, then
 * creates and updates kind by kind (projects, pools, networks, volumes, profiles, containers), then
 * deletes in the reverse order. Pure.
 */
export function computePlan(doc: HostDoc, host: HostState, opts: PlanOptions): Plan {
  const exact = opts.mode === 'apply';
  const steps: PlanStep[] = [];
  const server = serverStep(doc.config, host.config);
  if (server) steps.push(server);
  for (const kind of KINDS) {
    const have = new Map((host[SECTION[kind]] as Named[]).map((c) => [keyOf(kind, c), c]));
    for (const d of (doc[SECTION[kind]] ?? []) as Named[]) {
      const name = keyOf(kind, d);
      const c = have.get(name);
      if (kind === 'network' && c && !(c as { managed?: boolean }).managed)
        throw new DocumentError(`network "${name}": a host interface of that name exists and is not managed`);
      if (!c) {
        const step: PlanStep = { action: 'create', kind, name, keys: [], body: createBody(kind, d) };
        if (kind === 'container') step.state = wantedState(d as ContainerDoc);
        steps.push(step);
      } else {
        const step = updateStep(kind, d, c, exact);
        if (step) steps.push(step);
      }
    }
  }
  if (opts.prune)
    for (const kind of [...KINDS].reverse()) {
      const named = new Set(((doc[SECTION[kind]] ?? []) as Named[]).map((d) => keyOf(kind, d)));
      for (const c of host[SECTION[kind]] as Named[]) {
        const name = keyOf(kind, c);
        if (named.has(name) || !prunable(kind, c)) continue;
        const step: PlanStep = { action: 'delete', kind, name, keys: [] };
        if (kind === 'container') step.status = (c as { status?: string }).status;
        steps.push(step);
      }
    }
  return { steps };
}

/** One line per step (`+ `, `~ ` with the keys, `- `), then `N to add, N to change, N to delete`. */
export function renderPlan(plan: Plan): string[] {
  const label = (s: PlanStep) => (s.kind === 'server' ? 'server config' : `${KIND_LABEL[s.kind]} ${s.name}`);
  const lines = plan.steps.map((s) =>
    s.action === 'create'
      ? `+ ${label(s)}`
      : s.action === 'delete'
        ? `- ${label(s)}`
        : `~ ${label(s)}: ${s.keys.join(', ')}`,
  );
  const count = (a: PlanStep['action']) => plan.steps.filter((s) => s.action === a).length;
  lines.push(`${count('create')} to add, ${count('update')} to change, ${count('delete')} to delete`);
  return lines;
}
