/**
 * Managed-network benchmark for any server speaking the LXD-style REST API on a unix socket (svcd, or
 * LXD for comparison). A script run by hand that prints figures; it asserts nothing. Run it (as
 * bench/compare.sh --networks does) against a daemon in a network namespace of its own: the bridge it
 * creates has no NAT, no routing and no IPv6, so nothing leaves that namespace.
 *
 *   node --import tsx bench/network-bench.ts --socket <path> --pid <daemon pid> --image-file <unified tarball>
 *        [--count 200] [--iterations 10] [--subnet 10.201.0.1/22] [--label NAME] [--json <out.json>]
 *
 * Workload, in order:
 *  1. POST /1.0/networks: a bridge `benchbr0` on --subnet;
 *  2. `--iterations` times: create and start a container with one nic on it, the time until its DHCP
 *     lease shows in GET /1.0/networks/benchbr0/leases, then force stop and delete;
 *  3. `--count` containers created and started at once, each with the time from its start to its lease;
 *  4. with those leases: GET …/leases and GET …/state, 200 sequential requests each;
 *  5. the bridge deleted inside the daemon's network namespace (`nsenter --net=/proc/<pid>/ns/net ip link
 *     del`): the time until it exists again (LXD does not repair it: reported as not repaired);
 *  6. everything deleted: containers, the network, the image.
 * The image must bring up eth0 with DHCP at boot (the busybox test image does when eth0 exists).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { parseArgs, promisify } from 'node:util';
import { uploadImageFile } from './lib/image-upload.ts';
import { fmtMs, summarize, table, type LatencyStats } from './lib/stats.ts';
import { errorText, UnixClient } from './lib/unix-client.ts';

const run = promisify(execFile);
const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    pid: { type: 'string' },
    'image-file': { type: 'string' },
    count: { type: 'string', default: '200' },
    iterations: { type: 'string', default: '10' },
    subnet: { type: 'string', default: '10.201.0.1/22' },
    label: { type: 'string', default: 'server' },
    json: { type: 'string' },
  },
  strict: true,
});
if (!opts.socket || !opts.pid || !opts['image-file']) {
  process.stderr.write(
    'usage: network-bench.ts --socket <path> --pid <daemon pid> --image-file <tarball> [--count N] [--iterations N] [--subnet CIDR] [--label L] [--json F]\n',
  );
  process.exit(2);
}
const NET = 'benchbr0';
const ALIAS = 'bench-net-busybox';
const OP_MS = 600_000;
const client = new UnixClient(opts.socket);
const log = (s: string) => process.stdout.write(`${s}\n`);
const netns = [`--net=/proc/${opts.pid}/ns/net`];

export interface NetworkBenchResults {
  label: string;
  networkCreateMs?: number;
  single: {
    create?: LatencyStats;
    start?: LatencyStats;
    createStart?: LatencyStats;
    lease?: LatencyStats;
    failed: number;
  };
  bulk?: { n: number; wallMs: number; failed: number; leased: number; within5s: number; lease?: LatencyStats };
  leasesGet?: LatencyStats;
  stateGet?: LatencyStats;
  repairMs?: number | null;
  errors: string[];
}
const results: NetworkBenchResults = { label: opts.label, single: { failed: 0 }, errors: [] };

const nic = { eth0: { type: 'nic', nictype: 'bridged', parent: NET, name: 'eth0' } };
const create = (name: string) =>
  client.operation('POST', '/1.0/containers', { name, source: { type: 'image', alias: ALIAS }, devices: nic }, OP_MS);
const start = (name: string) =>
  client.operation('PUT', `/1.0/containers/${name}/state`, { action: 'start', timeout: -1 }, OP_MS);
const destroy = async (name: string) => {
  await client
    .operation('PUT', `/1.0/containers/${name}/state`, { action: 'stop', force: true, timeout: -1 }, OP_MS)
    .catch(() => undefined);
  await client.operation('DELETE', `/1.0/containers/${name}`, undefined, OP_MS).catch(() => undefined);
};
/** Hostname → when (performance.now) it first showed in the leases. */
async function leasesNow(): Promise<Set<string>> {
  const r = await client.get(`/1.0/networks/${NET}/leases`);
  return new Set(
    ((r.json?.metadata ?? []) as { hostname: string; address: string }[])
      .filter((l) => l.address.includes('.'))
      .map((l) => l.hostname),
  );
}
async function timeGets(path: string, n: number): Promise<LatencyStats> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await client.get(path);
    if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status} ${errorText(r)}`);
    ms.push(r.ms);
  }
  return summarize(ms);
}
const bridgeExists = () =>
  run('nsenter', [...netns, 'ip', '-o', 'link', 'show', NET]).then(
    () => true,
    () => false,
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function single(iterations: number): Promise<void> {
  const c: number[] = [];
  const s: number[] = [];
  const l: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const name = `nb-single-${i}`;
    const cr = await create(name);
    const st = cr.ok ? await start(name) : cr;
    if (!cr.ok || !st.ok) {
      results.single.failed++;
      results.errors.push(`single ${name}: ${cr.error ?? st.error}`);
      await destroy(name);
      continue;
    }
    c.push(cr.ms);
    s.push(st.ms);
    const t0 = performance.now();
    while (performance.now() - t0 < 30_000 && !(await leasesNow()).has(name)) await sleep(20);
    if ((await leasesNow()).has(name)) l.push(performance.now() - t0);
    await destroy(name);
  }
  results.single = {
    ...results.single,
    create: summarize(c),
    start: summarize(s),
    createStart: summarize(c.map((x, i) => x + s[i]!)),
    ...(l.length ? { lease: summarize(l) } : {}),
  };
  log(
    `single (${iterations}): create ${fmtMs(results.single.create?.median)}, start ${fmtMs(results.single.start?.median)}, lease ${fmtMs(results.single.lease?.median)} after start (medians)`,
  );
}

async function bulk(n: number): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `nb-bulk-${i}`);
  const startedAt = new Map<string, number>();
  let failed = 0;
  const t0 = performance.now();
  await Promise.all(
    names.map(async (name) => {
      const cr = await create(name);
      const st = cr.ok ? await start(name) : cr;
      if (!cr.ok || !st.ok) {
        failed++;
        if (results.errors.length < 20) results.errors.push(`bulk ${name}: ${cr.error ?? st.error}`);
        return;
      }
      startedAt.set(name, performance.now());
    }),
  );
  const wallMs = performance.now() - t0;
  const leasedAt = new Map<string, number>();
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline && leasedAt.size < startedAt.size) {
    const now = performance.now();
    for (const h of await leasesNow()) if (startedAt.has(h) && !leasedAt.has(h)) leasedAt.set(h, now);
    await sleep(100);
  }
  // A lease seen before the start operation returned counts as 0 s after it.
  const delays = [...leasedAt].map(([h, t]) => Math.max(0, t - startedAt.get(h)!));
  results.bulk = {
    n,
    wallMs,
    failed,
    leased: leasedAt.size,
    within5s: delays.filter((d) => d <= 5_000).length,
    ...(delays.length ? { lease: summarize(delays) } : {}),
  };
  log(
    `bulk ${n} at once: wall ${fmtMs(wallMs)}, failed ${failed}, leased ${leasedAt.size}/${startedAt.size}, within 5 s ${results.bulk.within5s}, lease median ${fmtMs(results.bulk.lease?.median)} p95 ${fmtMs(results.bulk.lease?.p95)}`,
  );
  return names;
}

async function repair(): Promise<void> {
  await run('nsenter', [...netns, 'ip', 'link', 'del', NET]);
  const t0 = performance.now();
  while (performance.now() - t0 < 30_000) {
    if (await bridgeExists()) {
      results.repairMs = performance.now() - t0;
      log(`bridge deleted behind the daemon: back after ${fmtMs(results.repairMs)}`);
      return;
    }
    await sleep(50);
  }
  results.repairMs = null;
  log('bridge deleted behind the daemon: not repaired within 30 s');
}

async function main(): Promise<void> {
  const up = await uploadImageFile(client, opts['image-file']!, ALIAS, OP_MS);
  let names: string[] = [];
  try {
    const t0 = performance.now();
    const r = await client.request('POST', '/1.0/networks', {
      name: NET,
      config: {
        'ipv4.address': opts.subnet,
        'ipv4.nat': 'false',
        'ipv4.routing': 'false',
        'ipv6.address': 'none',
        'ipv4.dhcp.expiry': '1h',
      },
    });
    if (r.status !== 200 && r.status !== 201) throw new Error(`network create: HTTP ${r.status} ${errorText(r)}`);
    results.networkCreateMs = performance.now() - t0;
    log(`${opts.label}: network create ${fmtMs(results.networkCreateMs)}`);
    await single(Number(opts.iterations));
    names = await bulk(Number(opts.count));
    results.leasesGet = await timeGets(`/1.0/networks/${NET}/leases`, 200);
    results.stateGet = await timeGets(`/1.0/networks/${NET}/state`, 200);
    log(
      `with ${results.bulk?.leased} leases: GET leases ${fmtMs(results.leasesGet.median)}, GET state ${fmtMs(results.stateGet.median)} (medians)`,
    );
    await repair();
  } catch (e) {
    results.errors.push(String((e as Error).message ?? e));
    log(`error: ${(e as Error).message}`);
  } finally {
    await Promise.all(names.map(destroy));
    await client.request('DELETE', `/1.0/networks/${NET}`).catch(() => undefined);
    await client.request('DELETE', `/1.0/images/aliases/${ALIAS}`).catch(() => undefined);
    if (up.imported)
      await client.operation('DELETE', `/1.0/images/${up.fingerprint}`, undefined, 60_000).catch(() => undefined);
    client.close();
  }
  if (opts.json) await writeFile(opts.json, JSON.stringify(results, null, 2));
  log(
    table([
      ['', opts.label],
      ['create+start, nic on a bridge (median)', fmtMs(results.single.createStart?.median)],
      [`${results.bulk?.n ?? 0} launched at once (wall)`, fmtMs(results.bulk?.wallMs)],
      ['  failures / leased within 5 s', `${results.bulk?.failed ?? '-'} / ${results.bulk?.within5s ?? '-'}`],
      ['GET leases (median)', fmtMs(results.leasesGet?.median)],
      ['GET state (median)', fmtMs(results.stateGet?.median)],
      ['deleted bridge repaired after', results.repairMs === null ? 'never (30 s)' : fmtMs(results.repairMs)],
    ]),
  );
}

await main();
