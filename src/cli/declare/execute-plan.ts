import { ApiError, type ApiClient } from './api-client.ts';
import { DocumentError, KIND_LABEL, KINDS, type Kind } from './document.ts';
import type { Plan, PlanStep } from './compute-plan.ts';

const COLLECTION: Record<Kind, string> = {
  project: '/1.0/projects',
  storage_pool: '/1.0/storage-pools',
  network: '/1.0/networks',
  storage_volume: '',
  profile: '/1.0/profiles',
  container: '/1.0/containers',
};

function collectionOf(step: PlanStep): string {
  if (step.kind === 'server') return '/1.0';
  if (step.kind !== 'storage_volume') return COLLECTION[step.kind];
  const pool = step.name.slice(0, step.name.indexOf('/'));
  return `/1.0/storage-pools/${encodeURIComponent(pool)}/volumes/custom`;
}

function pathOf(step: PlanStep): string {
  const own = step.kind === 'storage_volume' ? step.name.slice(step.name.indexOf('/') + 1) : step.name;
  return `${collectionOf(step)}/${encodeURIComponent(own)}`;
}

/** Stop cleanly for up to 30 s, then force: a container that ignores its halt signal still stops. */
async function stopContainer(api: ApiClient, path: string): Promise<void> {
  try {
    await api.write('PUT', `${path}/state`, { action: 'stop', timeout: 30 });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    await api.write('PUT', `${path}/state`, { action: 'stop', timeout: 30, force: true });
  }
}

async function powerTo(api: ApiClient, path: string, want: 'running' | 'stopped', status: string | undefined) {
  if (want === 'running')
    await api.write('PUT', `${path}/state`, { action: status === 'Frozen' ? 'unfreeze' : 'start', timeout: 30 });
  else await stopContainer(api, path);
}

async function runStep(api: ApiClient, step: PlanStep): Promise<void> {
  if (step.kind === 'server') {
    await api.write('PATCH', '/1.0', step.body);
    return;
  }
  const path = pathOf(step);
  if (step.action === 'create') {
    await api.write('POST', collectionOf(step), step.body);
    if (step.kind === 'container' && step.state === 'running') await powerTo(api, path, 'running', 'Stopped');
  } else if (step.action === 'update') {
    if (step.body) await api.write('PUT', path, step.body);
    if (step.kind === 'container' && step.state) await powerTo(api, path, step.state, step.status);
  } else {
    if (step.kind === 'container' && (step.status === 'Running' || step.status === 'Frozen'))
      await api.write('PUT', `${path}/state`, { action: 'stop', timeout: 30, force: true });
    await api.write('DELETE', path);
  }
}

/** Run `steps` with at most `parallel` at once; the first failure stops what has not started. */
async function runAll(api: ApiClient, steps: PlanStep[], parallel: number): Promise<void> {
  let next = 0;
  let failed: unknown;
  const worker = async () => {
    while (failed === undefined && next < steps.length) {
      const step = steps[next++]!;
      try {
        await runStep(api, step);
      } catch (e) {
        const label = step.kind === 'server' ? 'server config' : `${KIND_LABEL[step.kind]} "${step.name}"`;
        failed ??= new DocumentError(`${label}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, steps.length) }, worker));
  if (failed !== undefined) throw failed;
}

/**
 * Carry a plan out in dependency order: the server's config; creates and updates kind by kind
 * (projects, pools, networks, volumes, profiles, containers); then deletes in the reverse order.
 * Objects of one kind go `parallel` at a time; every operation is waited for.
 */
export async function executePlan(api: ApiClient, plan: Plan, opts: { parallel: number }): Promise<void> {
  const of = (kind: PlanStep['kind'], del: boolean) =>
    plan.steps.filter((s) => s.kind === kind && (s.action === 'delete') === del);
  await runAll(api, of('server', false), 1);
  for (const kind of KINDS) await runAll(api, of(kind, false), opts.parallel);
  for (const kind of [...KINDS].reverse()) await runAll(api, of(kind, true), opts.parallel);
}
