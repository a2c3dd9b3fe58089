/**
 * Scale benchmark for a server speaking the LXD-style REST API on a unix socket (svcd, or LXD for
 * comparison): N running containers at once, on each pool given. A script run by hand (or by
 * `bash bench/compare.sh --scale N`) that prints figures; it asserts nothing.
 *
 *   node --import tsx bench/scale-bench.ts --socket <path> --image-file <unified tarball> [--pid <daemon pid>]
 *        [--n 1000] [--pools dir,btrfs] [--launch-concurrency 32] [--cpu-window 300] [--duration 5]
 *        [--log <daemon log file>] [--label NAME] [--json <out.json>]
 *
 * Per pool (dir: the default pool; btrfs: a pool `scale-btrfs` on a loop file the server makes):
 *  1. launch N containers (busybox, `default` profile, root on that pool), `--launch-concurrency` at a
 *     time, each created then started: wall time and failures;
 *  2. RSS of the daemon's whole process tree with N running, and per container over the idle tree's;
 *  3. the tree's CPU over `--cpu-window` seconds with nothing asked of it (observers, resync), as % of one core;
 *  4. GET /1.0/containers (recursion 0 and 1) at c=1 and c=16 for `--duration` s each: p95;
 *  5. svcd only (given --log and --pid): one full resync pass, triggered with SIGUSR2, its time read from
 *     the daemon's `resync pass done` log line;
 *  6. force stop + delete of all N, `--launch-concurrency` at a time: wall time and failures.
 * Every container the run made is deleted at the end, also on failure and on Ctrl-C.
 */
import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { uploadImageFile } from './lib/image-upload.ts';
import { settledTreeRssKiB, treeCpuPercent } from './lib/proc-tree.ts';
import { fmtKiB, fmtMs } from './lib/stats.ts';
import { errorText, UnixClient, type OperationResult } from './lib/unix-client.ts';
import { listCells, runPool, type PoolResults } from './lib/scale-steps.ts';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    pid: { type: 'string' },
    'image-file': { type: 'string' },
    n: { type: 'string', default: '1000' },
    pools: { type: 'string', default: 'dir,btrfs' },
    'launch-concurrency': { type: 'string', default: '32' },
    'cpu-window': { type: 'string', default: '300' },
    duration: { type: 'string', default: '5' },
    log: { type: 'string' },
    label: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (opts.help || !opts.socket || !opts['image-file']) {
  process.stderr.write(
    'usage: node --import tsx bench/scale-bench.ts --socket <path> --image-file <tarball> [--pid N] [--n 1000] [--pools dir,btrfs]\n' +
      '       [--launch-concurrency 32] [--cpu-window <s>] [--duration <s per list cell>] [--log <daemon log>] [--label NAME] [--json FILE]\n',
  );
  process.exit(opts.help ? 0 : 2);
}
const positive = (s: string, what: string) => {
  const n = Number(s);
  if (!(n > 0)) process.stderr.write(`scale-bench: --${what} expects a positive number, got "${s}"\n`), process.exit(2);
  return n;
};
const n = Math.floor(positive(opts.n!, 'n'));
const launchConcurrency = Math.floor(positive(opts['launch-concurrency']!, 'launch-concurrency'));
const cpuWindowMs = positive(opts['cpu-window']!, 'cpu-window') * 1000;
const durationMs = positive(opts.duration!, 'duration') * 1000;
const pools = opts
  .pools!.split(',')
  .map((p) => p.trim())
  .filter(Boolean);
for (const p of pools)
  if (p !== 'dir' && p !== 'btrfs') process.stderr.write(`scale-bench: unknown pool kind ${p}\n`), process.exit(2);

const client = new UnixClient(opts.socket!);
/** The daemon's state dir (its socket's): processes naming it (a database server, forwarders) are its tree too. */
const stateDir = path.dirname(opts.socket!);
const log = (s = '') => process.stdout.write(`${s}\n`);
const created = new Set<string>();

async function main(): Promise<void> {
  const r = await client.get('/1.0');
  if (r.status !== 200) throw new Error(`GET /1.0: HTTP ${r.status} ${errorText(r)}`);
  const env = r.json?.metadata?.environment ?? {};
  const server = String(env.server ?? 'unknown');
  const pid = Number(opts.pid ?? env.server_pid);
  if (!(pid > 0)) throw new Error('no daemon pid (--pid, or environment.server_pid)');
  const label = opts.label ?? server;
  log(
    `scale-bench against ${label} (${server} ${env.server_version ?? '?'}, pid ${pid}): N=${n}, pools ${pools.join(', ')}, CPU window ${cpuWindowMs / 1000} s`,
  );
  const image = await uploadImageFile(client, opts['image-file']!, 'scale-busybox', 600_000);
  const idleRssKiB = await settledTreeRssKiB(pid, 20_000, stateDir);
  const idleCpu0 = await treeCpuPercent(pid, Math.min(cpuWindowMs, 60_000), stateDir);
  log(
    `  idle: process tree RSS ${fmtKiB(idleRssKiB)}, CPU ${idleCpu0.percent.toFixed(2)}% of one core over ${idleCpu0.seconds.toFixed(0)} s with no container`,
  );
  const results: PoolResults[] = [];
  for (const pool of pools) {
    log(`\n  pool ${pool}`);
    const res = await runPool({
      client,
      pool,
      n,
      launchConcurrency,
      created,
      log,
      measure: async (running) => {
        const rssRunningKiB = await settledTreeRssKiB(pid, 20_000, stateDir);
        log(
          `    tree RSS with ${running} running: ${fmtKiB(rssRunningKiB)} (${fmtKiB((rssRunningKiB - idleRssKiB) / Math.max(1, running))} per container over idle)`,
        );
        log(`    measuring idle CPU of the tree for ${cpuWindowMs / 1000} s ...`);
        const idleCpu = await treeCpuPercent(pid, cpuWindowMs, stateDir);
        log(
          `    idle CPU with ${running} running: ${idleCpu.percent.toFixed(2)}% of one core (${idleCpu.members} processes in the tree; target ≤ 2%)`,
        );
        const list = await listCells(client, durationMs);
        for (const c of list)
          log(
            `    GET ${c.path.padEnd(31)} c=${String(c.concurrency).padStart(2)}  p95 ${fmtMs(c.latency.p95)}  median ${fmtMs(c.latency.median)}  ${c.requests} req${c.errors ? `  ERRORS ${c.errors}` : ''}`,
          );
        const resync = server === 'svcd' && opts.log ? await timeResync(pid, opts.log) : undefined;
        if (resync)
          log(
            `    one full resync pass: ${'error' in resync ? resync.error : `${fmtMs(resync.tookMs)} for ${resync.keys} keys`}`,
          );
        return {
          rssRunningKiB,
          rssPerContainerKiB: (rssRunningKiB - idleRssKiB) / Math.max(1, running),
          idleCpu,
          list,
          ...(resync ? { resync } : {}),
        };
      },
    });
    results.push(res);
  }
  if (pools.includes('btrfs')) await client.request('DELETE', '/1.0/storage-pools/scale-btrfs').catch(() => undefined);
  if (image.imported) await client.request('DELETE', `/1.0/images/${image.fingerprint}`).catch(() => undefined);
  if (opts.json) {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      opts.json,
      JSON.stringify(
        { label, server, n, idleRssKiB, idleCpu0, cpuWindowS: cpuWindowMs / 1000, pools: results },
        null,
        2,
      ),
    );
  }
}

/** SIGUSR2 to svcd starts one resync pass; its `resync pass done` line (reason SIGUSR2) says how long it took. */
async function timeResync(pid: number, logFile: string): Promise<{ keys: number; tookMs: number } | { error: string }> {
  const from = await open(logFile, 'r')
    .then(async (f) => (await f.stat()).size + (await f.close(), 0))
    .catch(() => 0);
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 30 * 60_000;
  while (Date.now() < deadline) {
    await new Promise((res) => setTimeout(res, 500));
    const text = (await readFile(logFile).catch(() => Buffer.alloc(0))).subarray(from).toString('utf8');
    for (const line of text.split('\n')) {
      if (!line.includes('resync')) continue;
      try {
        const j = JSON.parse(line);
        if (j.msg === 'resync pass done' && j.reason === 'SIGUSR2') return { keys: j.keys, tookMs: j.tookMs };
        if (j.msg === 'resync not started') return { error: `not started: ${j.err?.message ?? ''}` };
      } catch {
        /* not a JSON line */
      }
    }
  }
  return { error: 'no "resync pass done" line within 30 min (is the log level info?)' };
}

let cleaning: Promise<void> | undefined;
async function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    const names = [...created];
    for (let i = 0; i < names.length; i += 32) {
      await Promise.all(
        names.slice(i, i + 32).map(async (name) => {
          await client.operation(
            'PUT',
            `/1.0/containers/${name}/state`,
            { action: 'stop', force: true, timeout: -1 },
            120_000,
          );
          const d: OperationResult = await client.operation('DELETE', `/1.0/containers/${name}`, undefined, 120_000);
          if (d.ok || (await client.get(`/1.0/containers/${name}`)).status === 404) created.delete(name);
        }),
      );
    }
    if (created.size)
      process.stderr.write(
        `scale-bench: ${created.size} container(s) could not be deleted: ${[...created].slice(0, 5).join(', ')}\n`,
      );
    client.close();
  })();
  return cleaning;
}
process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (e: unknown) => {
    process.stderr.write(`scale-bench: ${e instanceof Error ? e.stack : String(e)}\n`);
    await cleanup();
    process.exit(1);
  });
