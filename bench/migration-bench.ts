/**
 * Container migration, svcd → svcd against LXD 5.0.2 → LXD 5.0.2 on this host, in one run:
 *   node --import tsx bench/migration-bench.ts [--rounds 2] [--big-mib 512] [--snap-mib 64] [--pool dir|btrfs]
 * Two svcd daemons (the build in dist/, made if stale, run by bin/svcd as the systemd unit runs it; `--tsx`:
 * src/main.ts through tsx, as the test suites run it) and two Debian LXD daemons, each with its own state
 * dir and HTTPS port on 127.0.0.1, driven by one Debian lxc. `--pool btrfs`: every container lives on a
 * btrfs pool `mb` on a sparse loop file that each daemon makes (`dir`, the default: each daemon's default
 * dir pool). The container: a stopped busybox one holding
 * a `--big-mib` random file and 3 snapshots, each taken after writing one more `--snap-mib` random file.
 * Timed: `lxc copy a:c b:cN` and `lxc copy l1:c l2:cN`; a plain local `rsync -a` of the same tree (the
 * svcd container's volume and its snapshots); then a container holding one 1 GiB file, copied svcd →
 * svcd, against a plain rsync of that file over a socket pair (rsync's own rsh transport, no network),
 * as throughput. Then 10 concurrent copies between the two svcd hosts (failures counted). Each timed case
 * starts after an untimed `sync`; the copies are also timed until on disk (the copy, then `sync`).
 * Run by hand (root), never as a test. Everything stays on loopback.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildBusyboxImage } from '../integration/support/busybox-image.ts';
import { lxcCli } from '../integration/support/lxc-cli.ts';
import { startLxd } from '../integration/support/lxd-daemon.ts';
import { ensureRootSubids } from '../integration/support/lxc-host.ts';
import { importTestImage, startTwoHosts, stopHosts } from '../integration/support/two-hosts.ts';
import { repoRoot } from '../integration/support/daemon.ts';

const run = promisify(execFile);
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const rounds = Number(arg('rounds', '2'));
const bigMib = Number(arg('big-mib', '512'));
const snapMib = Number(arg('snap-mib', '64'));
const poolDriver = arg('pool', 'dir');
if (poolDriver !== 'dir' && poolDriver !== 'btrfs') throw new Error(`--pool: dir or btrfs, not ${poolDriver}`);
const PASSWORD = 'bench-pw';

const since = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;
// Every case starts with nothing dirty in the page cache (an untimed `sync` first): a case must not pay for
// the writeback of the one before it (LXD's sink does not flush what it received; svcd's does).
const secs = async (f: () => Promise<unknown>) => {
  await run('sync', []);
  const t0 = process.hrtime.bigint();
  await f();
  return since(t0);
};
/** The time of `f`, and until what it wrote is on disk (`f`, then a `sync`). */
const secsToDisk = async (f: () => Promise<unknown>, onDisk: number[]) => {
  await run('sync', []);
  const t0 = process.hrtime.bigint();
  await f();
  const answered = since(t0);
  await run('sync', []);
  onDisk.push(since(t0));
  return answered;
};
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

await ensureRootSubids();
const tsx = process.argv.includes('--tsx');
if (!tsx) await run('bash', [path.join(repoRoot, 'scripts/build.sh'), '--if-stale']);
const [a, b] = await startTwoHosts(tsx ? {} : { command: [path.join(repoRoot, 'bin/svcd'), 'daemon'] });
const l1 = await startLxd('b1');
const l2 = await startLxd('b2');
const tmp = await mkdtemp(path.join(os.tmpdir(), 'mig-bench-'));
const dirs: string[] = [tmp];
const cli = await lxcCli(a.daemon.stateDir);
// lxc without the test helper's 60 s limit: ten big copies at once take longer
// (stdin closed: lxc init and launch read a config from a stdin that is not a terminal)
const lxcRun = (args: string[]) =>
  new Promise<string>((resolve, reject) => {
    const child = execFile(
      'lxc',
      args,
      { env: { ...process.env, LXD_CONF: cli.conf }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => (err ? reject(new Error(`lxc ${args.join(' ')}: ${stderr}`)) : resolve(stdout)),
    );
    child.stdin?.end();
  });
const lxc = { ok: lxcRun, run: (args: string[]) => lxcRun(args).catch(() => undefined), cleanup: () => cli.cleanup() };
try {
  for (const h of [a, b]) {
    await h.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } });
    await lxc.ok(['remote', 'add', h.name, h.url, '--password', PASSWORD, '--accept-certificate']);
    dirs.push((await importTestImage(h, { alias: 'bb' })).dir);
  }
  const img = await buildBusyboxImage({ dir: tmp, format: 'unified', compression: 'gzip' });
  if (img.format !== 'unified') throw new Error('unexpected image format');
  for (const [name, l] of [
    ['l1', l1],
    ['l2', l2],
  ] as const) {
    await lxc.ok(['remote', 'add', name, l.url, '--password', l.trustPassword, '--accept-certificate']);
    await lxc.ok(['image', 'import', img.file, `${name}:`, '--alias', 'bb']);
  }
  // the pool every container lives on (`-s` on launch and copy)
  const poolName = poolDriver === 'btrfs' ? 'mb' : 'default';
  if (poolDriver === 'btrfs')
    for (const r of ['a', 'b', 'l1', 'l2']) await lxc.ok(['storage', 'create', `${r}:mb`, 'btrfs', 'size=24GiB']);
  const onPool = ['-s', poolName];
  const fill = async (r: string, name: string, big: number) => {
    await lxc.ok(['launch', `${r}:bb`, `${r}:${name}`, ...onPool]);
    await lxc.ok(['exec', `${r}:${name}`, '--', 'sh', '-c', `head -c ${big * 1048576} /dev/urandom > /root/big`]);
    if (name === 'c')
      for (let i = 1; i <= 3; i++) {
        await lxc.ok([
          'exec',
          `${r}:${name}`,
          '--',
          'sh',
          '-c',
          `head -c ${snapMib * 1048576} /dev/urandom > /root/more${i}`,
        ]);
        await lxc.ok(['snapshot', `${r}:${name}`, `s${i}`]);
      }
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
  };
  await fill('a', 'c', bigMib);
  await fill('l1', 'c', bigMib);

  const svcd: number[] = [];
  const lxd: number[] = [];
  const svcdDisk: number[] = [];
  const lxdDisk: number[] = [];
  for (let i = 0; i < rounds; i++) {
    svcd.push(await secsToDisk(() => lxc.ok(['copy', 'a:c', `b:c${i}`, ...onPool]), svcdDisk));
    lxd.push(await secsToDisk(() => lxc.ok(['copy', 'l1:c', `l2:c${i}`, ...onPool]), lxdDisk));
  }
  // the same tree, locally: the volume and its three snapshots
  const pool = path.join(a.daemon.stateDir, 'storage-pools', poolName);
  const local: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const dst = path.join(tmp, `local${i}`);
    local.push(
      await secs(() =>
        run('rsync', [
          '-a',
          `${path.join(pool, 'containers-snapshots')}/`,
          `${path.join(pool, 'containers')}/`,
          `${dst}/`,
        ]),
      ),
    );
    await rm(dst, { recursive: true, force: true });
  }

  // one 1 GiB file: svcd → svcd throughput against rsync over a socket pair
  await fill('a', 'g', 1024);
  const gib = 1024 * 1024 * 1024;
  const svcdG: number[] = [];
  const svcdGDisk: number[] = [];
  for (let i = 0; i < rounds; i++)
    svcdG.push(await secsToDisk(() => lxc.ok(['copy', 'a:g', `b:g${i}`, ...onPool]), svcdGDisk));
  const rsh = path.join(tmp, 'rsh.sh');
  await writeFile(rsh, '#!/bin/sh\nshift\nexec "$@"\n');
  await chmod(rsh, 0o755);
  const src = path.join(tmp, 'gsrc');
  await run('sh', ['-c', `mkdir -p ${src} && head -c ${gib} /dev/urandom > ${src}/big`]);
  const pair: number[] = [];
  const pairDisk: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const dst = path.join(tmp, `gdst${i}`);
    pair.push(await secsToDisk(() => run('rsync', ['-a', '-e', rsh, `${src}/`, `localhost:${dst}/`]), pairDisk));
    await rm(dst, { recursive: true, force: true });
  }

  // 10 concurrent copies between the two svcd hosts
  const results = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) => lxc.ok(['copy', 'a:c', `b:par${i}`, '--instance-only', ...onPool])),
  );
  const failed = results.filter((r) => r.status === 'rejected').length;

  const m = { svcd: median(svcd), lxd: median(lxd), local: median(local) };
  const rows = [
    `| case | median of ${rounds} (s) | ratio |`,
    '| --- | --- | --- |',
    `| lxd → lxd (${poolDriver} pools), ${bigMib} MiB + 3 × ${snapMib} MiB snapshots | ${m.lxd.toFixed(2)} | 1 |`,
    `| svcd → svcd, same container | ${m.svcd.toFixed(2)} | ${(m.svcd / m.lxd).toFixed(2)} × lxd (target ≤ 0.33) |`,
    `| the same two, until the copy is on disk (the copy, then \`sync\`) | svcd ${median(svcdDisk).toFixed(2)}, lxd ${median(lxdDisk).toFixed(2)} | ${(median(svcdDisk) / median(lxdDisk)).toFixed(2)} × lxd |`,
    `| local rsync -a of the same tree | ${m.local.toFixed(2)} | svcd = ${(m.svcd / m.local).toFixed(2)} × local (moonshot ≤ 2) |`,
    `| 1 GiB file svcd → svcd | ${median(svcdG).toFixed(2)} | ${(1024 / median(svcdG)).toFixed(0)} MiB/s |`,
    `| 1 GiB rsync over a socket pair | ${median(pair).toFixed(2)} | ${(1024 / median(pair)).toFixed(0)} MiB/s; svcd = ${(median(pair) / median(svcdG)).toFixed(2)} × (target ≥ 0.9) |`,
    `| the same two, until on disk (the copy, then \`sync\`) | svcd ${median(svcdGDisk).toFixed(2)}, pair ${median(pairDisk).toFixed(2)} | svcd = ${(median(pairDisk) / median(svcdGDisk)).toFixed(2)} × |`,
    `| 10 concurrent copies svcd → svcd | | ${failed} failed |`,
  ];
  console.log(rows.join('\n'));
  console.log(JSON.stringify({ svcd, lxd, svcdDisk, lxdDisk, local, svcdG, svcdGDisk, pair, pairDisk, failed }));
} finally {
  await lxc.run(['delete', '-f', 'a:c']).catch(() => undefined);
  await l1.destroy();
  await l2.destroy();
  await stopHosts([a, b], dirs);
  await lxc.cleanup();
}
