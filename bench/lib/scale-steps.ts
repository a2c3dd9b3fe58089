/** The steps of bench/scale-bench.ts on one pool: launch N, measure with them running, delete them. */
import http from 'node:http';
import { percentile, summarize, type LatencyStats } from './stats.ts';
import { errorText, type OperationResult, type UnixClient } from './unix-client.ts';

export interface ListCell {
  path: string;
  concurrency: number;
  requests: number;
  errors: number;
  listed?: number;
  latency: LatencyStats;
}

export interface Measured {
  rssRunningKiB: number;
  rssPerContainerKiB: number;
  idleCpu: { percent: number; seconds: number; members: number };
  list: ListCell[];
  resync?: { keys: number; tookMs: number } | { error: string };
}

export interface PoolResults extends Measured {
  pool: string;
  n: number;
  launchWallMs: number;
  createFailed: number;
  startFailed: number;
  running: number;
  launchLatency?: LatencyStats;
  deleteWallMs: number;
  deleteFailed: number;
  errors: Record<string, number>;
}

const OP_TIMEOUT_MS = 600_000;
const BTRFS_POOL = 'scale-btrfs';

/** `items` through `fn`, at most `concurrency` at a time. */
async function pooled<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** A GET timed to its last byte, the body not parsed (a 1000-container list is ~1 MB: parsing it in the bench would be most of what is timed). */
function timedGet(client: UnixClient, path: string): Promise<{ status: number; ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(
      { socketPath: client.socketPath, agent: client.agent, path, headers: { Host: 'localhost' } },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, bytes }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

/** GET /1.0/containers with recursion 0 and 1, at c=1 and c=16, `durationMs` each (latency to the last byte). */
export async function listCells(client: UnixClient, durationMs: number): Promise<ListCell[]> {
  const cells: ListCell[] = [];
  for (const path of ['/1.0/containers', '/1.0/containers?recursion=1']) {
    for (const concurrency of [1, 16]) {
      const lat: number[] = [];
      let errors = 0;
      const first = await client.get(path).catch(() => undefined);
      const listed: number | undefined = Array.isArray(first?.json?.metadata) ? first.json.metadata.length : undefined;
      const deadline = performance.now() + durationMs;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < deadline) {
            const r = await timedGet(client, path).catch(() => undefined);
            if (r?.status !== 200) {
              errors++;
              continue;
            }
            lat.push(r.ms);
          }
        }),
      );
      cells.push({
        path,
        concurrency,
        requests: lat.length + errors,
        errors,
        ...(listed !== undefined ? { listed } : {}),
        latency: summarize(lat),
      });
    }
  }
  return cells;
}

async function ensureBtrfsPool(client: UnixClient, n: number): Promise<void> {
  if ((await client.get(`/1.0/storage-pools/${BTRFS_POOL}`)).status === 200) return;
  // Sparse: a busybox container costs a few MiB of metadata on btrfs.
  const size = `${Math.max(8, Math.ceil(n / 50))}GiB`;
  const r = await client.request('POST', '/1.0/storage-pools', { name: BTRFS_POOL, driver: 'btrfs', config: { size } });
  if (r.status !== 200 && r.status !== 201 && r.status !== 202)
    throw new Error(`create btrfs pool: HTTP ${r.status} ${errorText(r)}`);
  if (r.status === 202 && typeof r.json?.operation === 'string')
    await client.waitOperation(r.json.operation, Date.now() + OP_TIMEOUT_MS);
}

function countError(errors: Record<string, number>, phase: string, r: OperationResult): void {
  const text = `${phase}: ${(r.error ?? 'failed')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')
    .replace(/scale-\w+-\d+/g, '<name>')
    .slice(0, 200)}`;
  errors[text] = (errors[text] ?? 0) + 1;
}

export async function runPool(deps: {
  client: UnixClient;
  pool: string;
  n: number;
  launchConcurrency: number;
  /** Every container name asked for (the caller deletes what is left on failure). */
  created: Set<string>;
  log: (s: string) => void;
  measure: (running: number) => Promise<Measured>;
}): Promise<PoolResults> {
  const { client, pool, n, log } = deps;
  if (pool === 'btrfs') await ensureBtrfsPool(client, n);
  const devices = pool === 'btrfs' ? { root: { type: 'disk', path: '/', pool: BTRFS_POOL } } : {};
  const names = Array.from({ length: n }, (_, i) => `scale-${pool}-${i + 1}`);
  const errors: Record<string, number> = {};
  let createFailed = 0;
  let startFailed = 0;
  const lat: number[] = [];
  const t0 = performance.now();
  let done = 0;
  await pooled(names, deps.launchConcurrency, async (name) => {
    deps.created.add(name);
    const body = { name, profiles: ['default'], devices, source: { type: 'image', alias: 'scale-busybox' } };
    const c = await client.operation('POST', '/1.0/containers', body, OP_TIMEOUT_MS);
    if (!c.ok) return void (createFailed++, countError(errors, 'create', c));
    const s = await client.operation(
      'PUT',
      `/1.0/containers/${name}/state`,
      { action: 'start', timeout: -1 },
      OP_TIMEOUT_MS,
    );
    if (!s.ok) return void (startFailed++, countError(errors, 'start', s));
    lat.push(c.ms + s.ms);
    if (++done % 100 === 0) log(`    ${done} running after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });
  const launchWallMs = performance.now() - t0;
  const listedR = await client.get('/1.0/containers?recursion=1');
  const mine = new Set(names);
  const running = Array.isArray(listedR.json?.metadata)
    ? listedR.json.metadata.filter((c: any) => mine.has(c.name) && c.status_code === 103).length
    : 0;
  const launchLatency = lat.length ? summarize(lat) : undefined;
  log(
    `    launched ${n}: wall ${(launchWallMs / 1000).toFixed(1)} s, failed create ${createFailed}, start ${startFailed}, running ${running}/${n}` +
      (launchLatency
        ? ` (create+start per container: median ${launchLatency.median.toFixed(0)} ms, p95 ${percentile(
            [...lat].sort((a, b) => a - b),
            95,
          ).toFixed(0)} ms)`
        : ''),
  );
  const measured = await deps.measure(running);
  const t1 = performance.now();
  let deleteFailed = 0;
  await pooled(names, deps.launchConcurrency, async (name) => {
    if (!deps.created.has(name)) return;
    await client.operation(
      'PUT',
      `/1.0/containers/${name}/state`,
      { action: 'stop', force: true, timeout: -1 },
      OP_TIMEOUT_MS,
    );
    const d = await client.operation('DELETE', `/1.0/containers/${name}`, undefined, OP_TIMEOUT_MS);
    if (d.ok || (await client.get(`/1.0/containers/${name}`)).status === 404) deps.created.delete(name);
    else deleteFailed++, countError(errors, 'delete', d);
  });
  const deleteWallMs = performance.now() - t1;
  log(`    stopped and deleted ${n}: wall ${(deleteWallMs / 1000).toFixed(1)} s, failed ${deleteFailed}`);
  for (const [text, count] of Object.entries(errors)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6))
    log(`    ${count}× ${text}`);
  return {
    pool,
    n,
    launchWallMs,
    createFailed,
    startFailed,
    running,
    ...(launchLatency ? { launchLatency } : {}),
    ...measured,
    deleteWallMs,
    deleteFailed,
    errors,
  };
}
