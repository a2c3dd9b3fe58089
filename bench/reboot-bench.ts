/**
 * Time to all-back after a simulated host reboot, against raw LXC starting the same containers, in one run:
 *   node --import tsx bench/reboot-bench.ts [--count 12] [--rounds 3] [--trace] [--cpu] [--prof DIR] [--tsx]
 * svcd runs as bin/svcd runs it (the build in dist/, made if stale; `--tsx`: src/main.ts through tsx) in a temp state dir with a btrfs pool on a loop file and a
 * managed bridge (no NAT, no IPv6, dnsmasq never forwarding). Each round: the simulated reboot (daemon tree and
 * its private server killed, containers stopped, bridge, nft tables, mounts and loops gone), then svcd started
 * again, timed until every container has a fresh DHCP lease (dnsmasq's lease file) and the API shows it Running
 * with that address (`GET /1.0/containers?recursion=2`, as `lxc list`, which reads the address inside the
 * container); then, with svcd stopped (containers left as they are), every container stopped and started again by
 * `lxc-start` two at a time, timed until each is RUNNING, until each has a fresh lease, and until each has the
 * address inside (its init's /proc/<pid>/net/fib_trie, where svcd's API reads it). Both sides wait for the leases
 * the same way, in the file (polling svcd's API meanwhile would cost svcd what it measures), then look for the
 * addresses every 10 ms: the DHCP client sets its address a few ms after dnsmasq wrote the lease.
 * Run by hand (root), never as a test.
 * With DATABASE_URL set, the daemon uses that PostgreSQL database instead of its private server.
 * `--trace`: the daemon logs at debug, and each round prints its boot timeline (the daemon's log lines about the
 * boot and the containers' reconciles, and when each lease was seen), in ms from the restart.
 * `--prof DIR`: every daemon run that stops cleanly (each round's restart) writes a V8 CPU profile into DIR.
 * `--cpu`: each round also prints the host CPU each side spent, and svcd's and its PostgreSQL's part (host-cpu.ts;
 * the samples cost the bench some CPU inside the windows they time).
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../integration/support/container-env.ts';
import { eventually } from '../integration/support/http.ts';
import { freeSubnet24, safeNetworkConfig } from '../integration/support/networks.ts';
import { repoRoot } from '../integration/support/daemon.ts';
import { simulateReboot } from '../integration/support/simulate-reboot.ts';
import { cpuSpent, sampleCpu, type CpuSample } from './host-cpu.ts';
import { parseFibTrieLocal } from '../src/host/lxc/parse-proc-net.ts';

const run = promisify(execFile);
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const count = arg('count', 12);
const rounds = arg('rounds', 3);
const trace = process.argv.includes('--trace');
const cpu = process.argv.includes('--cpu');
const profIdx = process.argv.indexOf('--prof');
const profDir = profIdx > 0 ? process.argv[profIdx + 1] : undefined;

// The built daemon, as bin/svcd and the systemd unit run it (plain node on dist/, no transpiling at start or at
// a module's first import); `--tsx`: the checkout's src/main.ts through tsx, as the test suites run it.
const tsx = process.argv.includes('--tsx');
if (!tsx) await run('bash', [path.join(repoRoot, 'scripts/build.sh'), '--if-stale']);
const command = tsx ? undefined : [path.join(repoRoot, 'bin/svcd'), 'daemon'];
// DATABASE_URL: an operator's PostgreSQL instead of the private server (whose statements can then be logged)
const dbEnv: Record<string, string> = process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {};
const { d, api, imgDir } = await startBusyboxDaemon(
  {
    ...dbEnv,
    ...(profDir ? { SVCD_NODE_FLAGS: `--cpu-prof --cpu-prof-dir=${profDir}` } : {}),
    ...(trace ? { SVCD_LOG_LEVEL: 'debug' } : {}),
  },
  { command },
);
const net = `rbb${process.pid % 100000}`;
const names = Array.from({ length: count }, (_, i) => `rbb${i}`);
const lxcPath = path.join(d.stateDir, 'containers');
const leasesFile = path.join(d.stateDir, 'networks', net, 'dnsmasq.leases');
const state = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
const isLeased = (s: any, prefix3: string) =>
  s?.status === 'Running' &&
  (s.network?.eth0?.addresses ?? []).some((a: any) => a.family === 'inet' && a.address.startsWith(`${prefix3}.`));
const leased = async (name: string, prefix3: string) => isLeased(await state(name), prefix3);
const svcdRows: number[] = [];
const apiRows: number[] = [];
const lxcRows: number[] = [];
const lxcLeaseRows: number[] = [];
/** safeNetworkConfig's ipv4.dhcp.expiry is dnsmasq's default here: one hour. */
const LEASE_SECONDS = 3600;
try {
  const { cidr, prefix3 } = await freeSubnet24(11);
  await api.post('/1.0/networks', { name: net, config: safeNetworkConfig(cidr) });
  await api.post('/1.0/storage-pools', { name: 'rbb', driver: 'btrfs', config: { size: '2GiB' } });
  const devices = {
    eth0: { type: 'nic', nictype: 'bridged', parent: net },
    root: { type: 'disk', path: '/', pool: 'rbb' },
  };
  for (const name of names)
    await waitOp(api, await api.post('/1.0/containers', { name, devices, source: { type: 'image', alias: 'bb' } }));
  for (const name of names) await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
  for (const name of names) await eventually(() => leased(name, prefix3), `${name} leased`, 60_000);

  for (let round = 1; round <= rounds; round++) {
    // The reboot.
    await simulateReboot(d, [net]);
    const cpuSamples: CpuSample[] = [];
    const sample = async () => {
      if (cpu) cpuSamples.push(await sampleCpu(d.stateDir));
    };
    await sample();
    const t0 = performance.now();
    const wallT0 = Date.now();
    await d.restart();
    apiRows.push(performance.now() - t0);
    await sample();
    // Every lease from dnsmasq's file first (as for raw LXC below: looking costs svcd nothing), then every
    // container Running with its address as the API says, in one listing with their state (as `lxc list`).
    const seen = await freshLeases(wallT0, names.length);
    const svcdLeased = performance.now() - t0;
    await eventually(
      async () => {
        const up = ((await api.get('/1.0/containers?recursion=2')).json.metadata as any[]).filter(
          (c) => names.includes(c.name) && isLeased(c.state, prefix3),
        );
        return up.length === names.length;
      },
      'every container Running with its lease',
      120_000,
      10,
    );
    svcdRows.push(performance.now() - t0);
    await sample();
    seen.push([svcdRows.at(-1)!, 'every container Running with its lease (API)']);
    if (trace) printTimeline(d.output(), wallT0, apiRows.at(-1)!, seen, await namesById(lxcPath));

    // Raw LXC on the same containers, with the bridge and pool svcd just brought back.
    await d.stop();
    const ids = await readdir(lxcPath);
    for (const id of ids) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath]).catch(() => {});
    await sample();
    const t1 = performance.now();
    const wallT1 = Date.now();
    const queue = [...ids];
    await Promise.all(
      [0, 1].map(async () => {
        for (let id = queue.shift(); id; id = queue.shift()) await run('lxc-start', ['-n', id, '-P', lxcPath]);
      }),
    );
    // Each one's init pid with its state.
    const pids = await Promise.all(
      ids.map((id) =>
        eventually(
          async () => {
            // With two items asked, lxc-info labels them ("State:  RUNNING", "PID:  1234") despite -H.
            const out = (await run('lxc-info', ['-s', '-p', '-n', id, '-P', lxcPath])).stdout;
            return /^State:\s+RUNNING$/m.test(out) && /^PID:\s+(\d+)$/m.exec(out)?.[1];
          },
          `${id} running`,
          60_000,
        ),
      ),
    );
    lxcRows.push(performance.now() - t1);
    // With its network too: leased, and the address set inside.
    await freshLeases(wallT1, ids.length);
    const rawLeased = performance.now() - t1;
    await eventually(
      async () => {
        const tries = await Promise.all(
          pids.map((pid) => readFile(`/proc/${pid}/net/fib_trie`, 'utf8').catch(() => '')),
        );
        return tries.every((t) => parseFibTrieLocal(t).some((a) => a.startsWith(`${prefix3}.`)));
      },
      'every container with its address inside',
      60_000,
      10,
    );
    lxcLeaseRows.push(performance.now() - t1);
    await sample();
    if (cpu) {
      const [a, b, c, r0, r1] = cpuSamples as [CpuSample, CpuSample, CpuSample, CpuSample, CpuSample];
      console.error(
        `round ${round} CPU: svcd's start-up: ${cpuSpent(a, b)}; its containers: ${cpuSpent(b, c)}; raw: ${cpuSpent(r0, r1)}`,
      );
    }
    await d.restart();
    for (const name of names) await eventually(() => leased(name, prefix3), `${name} leased`, 60_000);
    const part = svcdRows.at(-1)! - apiRows.at(-1)!;
    const ms = (x: number) => `${Math.round(x)} ms`;
    console.error(
      `round ${round} tails: svcd every lease at +${ms(svcdLeased - apiRows.at(-1)!)}, shown +${ms(svcdRows.at(-1)! - svcdLeased)}; ` +
        `raw every one RUNNING at ${ms(lxcRows.at(-1)!)}, leased ${ms(rawLeased)}, address inside +${ms(lxcLeaseRows.at(-1)! - rawLeased)}`,
    );
    console.error(
      `round ${round}: svcd ${(svcdRows.at(-1)! / 1000).toFixed(2)} s (containers ${(part / 1000).toFixed(2)} s), ` +
        `lxc-start to every address ${(lxcLeaseRows.at(-1)! / 1000).toFixed(2)} s: ${(part / lxcLeaseRows.at(-1)!).toFixed(2)}×, ` +
        `load ${os.loadavg()[0]!.toFixed(2)}`,
    );
  }
} finally {
  await teardownContainers(d, api, [imgDir]);
}

/**
 * Waits until `count` leases were taken since `sinceMs` (dnsmasq's file: expiry = when taken + the lease time),
 * looking every 10 ms; returns when each host name's lease was first seen, in ms from `sinceMs`.
 */
async function freshLeases(sinceMs: number, count: number): Promise<[number, string][]> {
  const since = Math.floor(sinceMs / 1000);
  const seen = new Map<string, number>();
  await eventually(
    async () => {
      for (const line of (await readFile(leasesFile, 'utf8').catch(() => '')).split('\n')) {
        const [expiry, , , host] = line.split(' ');
        if (host && Number(expiry) >= since + LEASE_SECONDS && !seen.has(host)) seen.set(host, Date.now() - sinceMs);
      }
      return seen.size >= count;
    },
    'every container leased again',
    60_000,
    10,
  );
  return [...seen].map(([host, t]) => [t, `${host} leased (dnsmasq)`]);
}

/** Container name by LXC name (svcd's id), from each rendered config's `lxc.uts.name`. */
async function namesById(lxcPath: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const id of await readdir(lxcPath)) {
    const cfg = await readFile(path.join(lxcPath, id, 'config'), 'utf8').catch(() => '');
    const m = /^lxc\.uts\.name = (.+)$/m.exec(cfg);
    if (m) out.set(id, m[1]!);
  }
  return out;
}

/** The boot's timeline from the daemon's JSON log lines (container keys shortened), with the bench's own looks. */
function printTimeline(
  output: string,
  wallT0: number,
  apiMs: number,
  seen: [number, string][],
  names: Map<string, string>,
) {
  const lines: [number, string][] = [
    [apiMs, 'bench: API answered'],
    ...seen.map(([t, n]): [number, string] => [t, `bench: ${n}`]),
  ];
  for (const raw of output.split('\n')) {
    let o: any;
    try {
      o = JSON.parse(raw);
    } catch {
      continue;
    }
    if (o.kind && o.kind !== 'container' && o.msg !== 'reconcile start' && o.msg !== 'reconciled') continue;
    const what = [
      o.msg,
      o.kind,
      names.get(o.key) ?? o.key?.slice(0, 8),
      o.reason,
      o.tookMs && `${o.tookMs} ms`,
      o.err?.message,
    ]
      .filter(Boolean)
      .join(' ');
    lines.push([o.time - wallT0, what]);
  }
  for (const [t, what] of lines.sort((a, b) => a[0] - b[0]))
    console.error(`${String(Math.round(t)).padStart(6)} ${what}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const s = median(svcdRows);
const a = median(apiRows);
const l = median(lxcRows);
const after = svcdRows.map((x, i) => x - apiRows[i]!);
console.log(
  `\n${count} containers, ${rounds} rounds, ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(2)}\n`,
);
console.log('| | median | all rounds |');
console.log('| --- | --- | --- |');
console.log(
  `| svcd: restart to all Running with a lease | ${(s / 1000).toFixed(2)} s | ${svcdRows.map((x) => (x / 1000).toFixed(2)).join(', ')} |`,
);
console.log(
  `| svcd: its own start-up (restart to the API answering) | ${(a / 1000).toFixed(2)} s | ${apiRows.map((x) => (x / 1000).toFixed(2)).join(', ')} |`,
);
console.log(
  `| svcd: the containers (API answering to all Running with its address) | ${(median(after) / 1000).toFixed(2)} s | ${after.map((x) => (x / 1000).toFixed(2)).join(', ')} |`,
);
console.log(
  `| raw \`lxc-start\`, two at a time | ${(l / 1000).toFixed(2)} s | ${lxcRows.map((x) => (x / 1000).toFixed(2)).join(', ')} |`,
);
console.log(
  `| raw \`lxc-start\`, two at a time, to every lease and address inside | ${(median(lxcLeaseRows) / 1000).toFixed(2)} s | ${lxcLeaseRows.map((x) => (x / 1000).toFixed(2)).join(', ')} |`,
);
console.log(
  `| svcd's containers ÷ raw, both to every address inside | ${(median(after) / median(lxcLeaseRows)).toFixed(2)}× | (target ≤ 1.1×) |`,
);
