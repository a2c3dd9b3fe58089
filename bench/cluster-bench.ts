/**
 * A cluster of three svcd members on one PostgreSQL against a two-member lxd 5.0.2 cluster, on this host, in
 * one run:
 *   SVCD_TEST_PG_URL=postgres://… node --import tsx bench/cluster-bench.ts [--count 300] [--reps 15]
 *     [--rounds 8] [--burst 60] [--no-lxd]
 * Both clusters hold `--count` stopped busybox containers spread evenly over their members. Timed:
 * - `GET /1.0/containers?recursion=1` through every member of each (the unix socket, one at a time, alternately);
 * - a create+start through member a, placed on a (local) and on b (forwarded), alternately;
 * - member c killed (SIGKILL) a quarter into a burst of `--burst` creates sent to a and b (a third with target
 *   the member asked, a third the other survivor, a third placed): failures counted (a placed create c had
 *   accepted before it died fails with it, and is counted apart), the time until a shows c
 *   Offline against the threshold, then c restarted and timed until it is Online with all of its containers.
 * The svcd members run from this checkout (through tsx) on a new database of SVCD_TEST_PG_URL's server.
 * Run by hand (root), never as a test. Everything stays on loopback.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { formCluster, startClusterHosts } from '../integration/support/cluster.ts';
import type { Client } from '../integration/support/http.ts';
import { startLxd, type LxdHost } from '../integration/support/lxd-daemon.ts';
import { importTestImage, stopHosts, type Host } from '../integration/support/two-hosts.ts';
import { table } from './lib/stats.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const count = Number(arg('count', '300'));
const reps = Number(arg('reps', '15'));
const rounds = Number(arg('rounds', '20'));
const burst = Number(arg('burst', '60'));
const withLxd = !process.argv.includes('--no-lxd');
const THRESHOLD_S = 10;

const now = () => performance.now();
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(1)} ms`;
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** An async operation's final state: `Success`, or what went wrong (never throws). */
async function finish(api: Client, res: { status: number; json: any; text: string }): Promise<string> {
  if (res.status !== 202 && res.status !== 200) return `${res.status} ${res.json?.error ?? res.text.slice(0, 200)}`;
  if (!res.json?.operation) return 'Success';
  // lxd 5.0.2 clustered may answer a wait before the operation ends (still Running): wait again.
  let w = await api.get(`${res.json.operation}/wait?timeout=300`);
  while (['Running', 'Pending'].includes(w.json?.metadata?.status)) {
    await sleep(20);
    w = await api.get(`${res.json.operation}/wait?timeout=300`);
  }
  const md = w.json?.metadata;
  return md?.status === 'Success' ? 'Success' : `${w.status} ${md?.err || w.json?.error || w.text.slice(0, 2000)}`;
}
async function must(api: Client, res: { status: number; json: any; text: string }, what: string) {
  const out = await finish(api, res);
  if (out !== 'Success') throw new Error(`${what}: ${out}`);
}
/** Runs `jobs` with at most `width` at once. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

interface Member {
  name: string;
  api: Client;
}
/** `--count` containers, member i % n holding container i, each created through its own member. */
async function fill(members: Member[], instancesPath: string, width: number) {
  const t0 = now();
  await pool(
    Array.from({ length: count }, (_, i) => async () => {
      const m = members[i % members.length]!;
      const body = { name: `f${i}`, type: 'container', source: { type: 'image', alias: 'bb' } };
      await must(m.api, await m.api.post(`${instancesPath}?target=${m.name}`, body), `create f${i} on ${m.name}`);
    }),
    width,
  );
  return (now() - t0) / 1000;
}
/** Each member's list of every container, `reps` times, one member after another. */
async function timeLists(all: Member[]) {
  const times = new Map<string, number[]>(all.map((m) => [m.name, []]));
  for (let r = 0; r < reps; r++)
    for (const m of all) {
      const t0 = now();
      const res = await m.api.get('/1.0/containers?recursion=1');
      const t = now() - t0;
      const n = res.json?.metadata?.length;
      if (n !== count) throw new Error(`${m.name} listed ${n} containers, not ${count}`);
      times.get(m.name)!.push(t);
    }
  return new Map([...times].map(([k, v]) => [k, median(v)]));
}

const cl = await startClusterHosts(3);
const [a, b, c] = cl.hosts as [Host, Host, Host];
const dirs: string[] = [];
let lxds: LxdHost[] = [];
try {
  await formCluster(a, [b, c]);
  await a.api.patch('/1.0', { config: { 'cluster.offline_threshold': String(THRESHOLD_S) } });
  const img = await importTestImage(a, { alias: 'bb' });
  dirs.push(img.dir);
  const svcdMembers = [a, b, c].map((h) => ({ name: h.name, api: h.api }));
  const svcdFill = await fill(svcdMembers, '/1.0/containers', 6);
  console.error(`svcd: ${count} containers made in ${svcdFill.toFixed(1)} s`);

  let lxdMembers: Member[] = [];
  let lxdFill = 0;
  if (withLxd) {
    const l1 = await startLxd('k1');
    lxds = [l1];
    const l2 = await startLxd('k2', { init: false });
    lxds.push(l2);
    await must(l1.api, await l1.api.put('/1.0/cluster', { server_name: 'l1', enabled: true }), 'lxd bootstrap');
    const join = await l2.api.put('/1.0/cluster', {
      server_name: 'l2',
      enabled: true,
      server_address: `127.0.0.1:${l2.port}`,
      cluster_address: `127.0.0.1:${l1.port}`,
      cluster_certificate: (await l1.api.get('/1.0')).json.metadata.environment.certificate,
      cluster_password: l1.trustPassword,
      member_config: [{ entity: 'storage-pool', name: 'default', key: 'source', value: '' }],
    });
    await must(l2.api, join, 'lxd join');
    if (img.format !== 'unified') throw new Error('unexpected image format');
    const up = await l1.api.post('/1.0/images', await readFile(img.file), {
      'Content-Type': 'application/octet-stream',
    });
    await must(l1.api, up, 'lxd image import');
    await l1.api.post('/1.0/images/aliases', { name: 'bb', target: img.fingerprint });
    lxdMembers = [
      { name: 'l1', api: l1.api },
      { name: 'l2', api: l2.api },
    ];
    lxdFill = await fill(lxdMembers, '/1.0/instances', 4);
    console.error(`lxd: ${count} containers made in ${lxdFill.toFixed(1)} s`);
  }

  const lists = await timeLists([...svcdMembers, ...lxdMembers]);
  for (const l of lxds) await l.destroy();
  lxds = [];

  // Create+start through a: on a itself, then on b (forwarded), alternately; each deleted after.
  const local: number[] = [];
  const forwarded: number[] = [];
  for (let r = 0; r < rounds; r++)
    // a, b, then b, a: neither goes first every time.
    for (const [to, into] of (r % 2
      ? [
          ['b', forwarded],
          ['a', local],
        ]
      : [
          ['a', local],
          ['b', forwarded],
        ]) as [string, number[]][]) {
      const name = `cs${r}${to}`;
      const t0 = now();
      const body = { name, source: { type: 'image', alias: 'bb' } };
      await must(a.api, await a.api.post(`/1.0/containers?target=${to}`, body), `create ${name}`);
      await must(a.api, await a.api.put(`/1.0/containers/${name}/state`, { action: 'start' }), `start ${name}`);
      into.push(now() - t0);
      await must(a.api, await a.api.put(`/1.0/containers/${name}/state`, { action: 'stop', force: true }), 'stop');
      await must(a.api, await a.api.delete(`/1.0/containers/${name}`), `delete ${name}`);
    }

  // The burst, and c killed a quarter into it.
  /** Creates with a target (a or b): none may fail. Placed ones may have gone to c before it died. */
  const failures: string[] = [];
  const placedFailures: string[] = [];
  let sent = 0;
  let killedAt = 0;
  const killer = (async () => {
    while (sent < burst / 4) await sleep(5);
    killedAt = now();
    await c.daemon.kill();
  })();
  const t0 = now();
  await pool(
    Array.from({ length: burst }, (_, i) => async () => {
      const via = i % 2 ? b : a;
      const kind = Math.floor(i / 2) % 3;
      const target = kind === 0 ? `?target=${via.name}` : kind === 1 ? `?target=${via === a ? 'b' : 'a'}` : '';
      sent++;
      const body = { name: `k${i}`, source: { type: 'image', alias: 'bb' } };
      const out = await finish(via.api, await via.api.post(`/1.0/containers${target}`, body));
      if (out !== 'Success') (target ? failures : placedFailures).push(`k${i} via ${via.name}${target}: ${out}`);
    }),
    8,
  );
  const burstS = (now() - t0) / 1000;
  await killer;
  const statusOf = async (name: string) =>
    (await a.api.get(`/1.0/cluster/members/${name}`)).json?.metadata?.status as string | undefined;
  while ((await statusOf('c')) !== 'Offline') await sleep(100);
  const offlineS = (now() - killedAt) / 1000;
  // Restarted: Online, and every container the database places on c is on its host and converged.
  const restart0 = now();
  await c.daemon.restart();
  const onC = async () => {
    const list = (await a.api.get('/1.0/containers?recursion=1')).json.metadata as any[];
    return list.filter((x) => x.location === 'c');
  };
  for (;;) {
    const mine = await onC();
    const onHost = new Set(await readdir(path.join(c.daemon.stateDir, 'containers')).catch(() => []));
    if ((await statusOf('c')) === 'Online' && onHost.size >= mine.length && mine.every((x) => x.status === 'Stopped'))
      break;
    await sleep(100);
  }
  const backS = (now() - restart0) / 1000;

  const svcdWorst = Math.max(...svcdMembers.map((m) => lists.get(m.name)!));
  const lxdBest = lxdMembers.length ? Math.min(...lxdMembers.map((m) => lists.get(m.name)!)) : Number.NaN;
  const fwd = median(forwarded) / median(local);
  const rows: string[][] = [['', 'median', 'note']];
  for (const [k, v] of lists)
    rows.push([`list of ${count}, recursion=1, through ${k}`, ms(v), k.startsWith('l') ? 'lxd 5.0.2' : 'svcd']);
  rows.push(['lxd best ÷ svcd worst', `${(lxdBest / svcdWorst).toFixed(1)}×`, 'target ≥ 10×']);
  rows.push(['create+start through a, on a', ms(median(local)), `${rounds} rounds`]);
  rows.push(['create+start through a, on b (forwarded)', ms(median(forwarded)), `${fwd.toFixed(2)}× (target ≤ 1.2)`]);
  const placed = Math.floor(burst / 3);
  rows.push([
    `burst of ${burst} creates to a and b, c killed`,
    `${burstS.toFixed(1)} s`,
    `${failures.length} of ${burst - placed} with target a or b failed; ${placedFailures.length} of ${placed} placed (accepted by c before it died)`,
  ]);
  rows.push(['killed to Offline', `${offlineS.toFixed(1)} s`, `threshold ${THRESHOLD_S} s (+5 s allowed)`]);
  rows.push(['restarted to Online and converged', `${backS.toFixed(1)} s`, '']);
  rows.push([
    `fill: ${count} containers`,
    `svcd ${svcdFill.toFixed(1)} s`,
    withLxd ? `lxd ${lxdFill.toFixed(1)} s` : '',
  ]);
  console.log(table(rows));
  for (const f of [...failures, ...placedFailures]) console.log(`failed: ${f}`);
  console.log(
    JSON.stringify({
      lists: Object.fromEntries(lists),
      local,
      forwarded,
      burstS,
      failures,
      placedFailures,
      offlineS,
      backS,
    }),
  );
} finally {
  for (const l of lxds) await l.destroy();
  await stopHosts([a, b, c], dirs);
  await cl.drop();
}
