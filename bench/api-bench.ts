/**
 * API benchmark for any server speaking the LXD-style REST API on a unix socket (svcd, or LXD for
 * comparison). A script run by hand that prints figures; it asserts nothing.
 *
 *   node --import tsx bench/api-bench.ts --socket <path> [--pid <daemon pid>] [--image <alias|fingerprint>]
 *        [--image-file <unified tarball>] [--counts 0,50,200] [--concurrency 1,16] [--duration 3]
 *        [--iterations 10] [--exec-rounds 40] [--settle 10] [--skip-exec] [--label NAME] [--json <out.json>]
 *
 * Workload, in order:
 *  1. GET /1.0 and GET /1.0/containers?recursion=1 with 0 bench containers, at each concurrency;
 *  2. single-container latencies: create, start, exec `true` (without websockets, then with them as
 *     `lxc exec` does), stop (force), delete (`--iterations` times); in the first round, on the running
 *     container, file push/pull (1 KiB, 64 MiB) and exec `true` `--exec-rounds` times each way;
 *  3. for every non-zero count N: N creates issued at once, each followed by its start (wall time,
 *     failures); the same GET cells with N running containers; daemon RSS; then force stop + delete
 *     of all N at once (wall time, failures); RSS right after and after `--settle` seconds.
 * Containers are named bench-<n>, are created from a local image (the alias `bench-busybox`, a
 * busybox image this script builds and uploads unless --image/--image-file is given) with the
 * `default` profile only, which must have no network device. Every container the run created is
 * deleted at the end, also on failure and on Ctrl-C.
 */
import http from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchResults, BulkResults, FilesResults, GetCell, SingleResults, StepStats } from './lib/results.ts';
import { findDaemonPids, loadAverage, processName, settled } from './lib/rss.ts';
import { describeTree, readTreeMemory } from './lib/process-tree.ts';
import { fmtKiB, fmtMs, fmtRate, summarize, table } from './lib/stats.ts';
import { execOverWebsockets } from './lib/exec-ws.ts';
import { uploadImageFile } from './lib/image-upload.ts';
import { errorText, UnixClient, type OperationResult } from './lib/unix-client.ts';

const IMAGE_ALIAS = 'bench-busybox';
const LIST_PATH = '/1.0/containers?recursion=1';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    pid: { type: 'string' },
    image: { type: 'string' },
    'image-file': { type: 'string' },
    counts: { type: 'string', default: '0,50,200' },
    concurrency: { type: 'string', default: '1,16' },
    duration: { type: 'string', default: '3' },
    iterations: { type: 'string', default: '10' },
    'exec-rounds': { type: 'string', default: '40' },
    settle: { type: 'string', default: '10' },
    'op-timeout': { type: 'string', default: '600' },
    'skip-exec': { type: 'boolean', default: false },
    label: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});

function usage(code: number): never {
  process.stderr.write(
    'usage: node --import tsx bench/api-bench.ts --socket <path> [--pid <daemon pid>] [--image <alias or fingerprint>]\n' +
      '       [--image-file <unified image tarball>] [--counts 0,50,200] [--concurrency 1,16] [--duration <s per GET cell>]\n' +
      '       [--iterations <single-container rounds>] [--exec-rounds <execs on one running container>] [--settle <s before the RSS after deletion>] [--op-timeout <s>]\n' +
      '       [--skip-exec] [--label <name>] [--json <results file>]\n',
  );
  process.exit(code);
}
if (opts.help) usage(0);
if (!opts.socket) usage(2);

const intList = (s: string, what: string) =>
  s.split(',').map((x) => {
    const n = Number(x.trim());
    if (!Number.isInteger(n) || n < 0) {
      process.stderr.write(`api-bench: --${what} expects non-negative integers, got "${s}"\n`);
      process.exit(2);
    }
    return n;
  });
const num = (s: string, what: string) => {
  const n = Number(s);
  if (!Number.isFinite(n) || n < 0) {
    process.stderr.write(`api-bench: --${what} expects a number, got "${s}"\n`);
    process.exit(2);
  }
  return n;
};

const counts = [...new Set(intList(opts.counts!, 'counts'))].sort((a, b) => a - b);
const concurrencies = [...new Set(intList(opts.concurrency!, 'concurrency'))].filter((c) => c > 0);
const durationMs = num(opts.duration!, 'duration') * 1000;
const iterations = Math.floor(num(opts.iterations!, 'iterations'));
const execRounds = Math.floor(num(opts['exec-rounds']!, 'exec-rounds'));
const settleMs = num(opts.settle!, 'settle') * 1000;
const opTimeoutMs = num(opts['op-timeout']!, 'op-timeout') * 1000;
const MAX_REQUESTS_PER_CELL = 50_000;

const client = new UnixClient(opts.socket);
const log = (s = '') => process.stdout.write(`${s}\n`);
const warn = (s: string) => process.stderr.write(`${s}\n`);

/** Every container name this run asked the server to create (added before the request is sent). */
const created = new Set<string>();
let seq = 0;
const nextName = () => `bench-${++seq}`;
/** Work in flight (bulk phases), so a Ctrl-C cleanup lets creates land before deleting. */
const inflight = new Set<Promise<unknown>>();
function track<T>(p: Promise<T>): Promise<T> {
  inflight.add(p);
  void p.finally(() => inflight.delete(p)).catch(() => {});
  return p;
}
let aborting: string | undefined;
class Aborted extends Error {}
const checkAbort = () => {
  if (aborting) throw new Aborted(aborting);
};

let imageSource: Record<string, unknown> = {};
let importedFingerprint: string | undefined;
let createdAlias = false;
let tempDir: string | undefined;

const results: BenchResults = {
  label: opts.label ?? '',
  socket: opts.socket,
  server: { name: '?', version: '?' },
  startedAt: new Date().toISOString(),
  image: { ref: '', imported: false },
  options: {
    counts,
    concurrency: concurrencies,
    durationS: durationMs / 1000,
    iterations,
    skipExec: opts['skip-exec']!,
    settleS: settleMs / 1000,
  },
  rss: {},
  get: [],
  bulk: [],
  leftovers: [],
  load: [],
};
async function notePhase(phase: string): Promise<void> {
  const loadavg = await loadAverage();
  results.load.push({ phase, loadavg });
  if (loadavg[0] > 1.5)
    warn(`  (load average ${loadavg.join(' ')} as "${phase}" begins: other work on this machine skews the figures)`);
}
let pid: number | undefined;
/** The daemon's whole tree: it, its descendants, and what names its state directory (the socket's), not its containers. */
const tree = async () => (pid ? readTreeMemory(pid, { ownedPath: path.dirname(results.socket) }) : undefined);
const rss = async () => (await tree())?.rssKiB;
/** CPU seconds (user+system) the daemon's own process has used so far (not its children, nor a server it talks to). */
async function daemonCpuSeconds(): Promise<number | undefined> {
  if (!pid) return undefined;
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!text) return undefined;
  // utime and stime are fields 14 and 15 of stat: 11 and 12 after the command name.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}
const cpuSince = async (c0: number | undefined) => {
  const c1 = await daemonCpuSeconds();
  return c0 === undefined || c1 === undefined ? undefined : c1 - c0;
};
const fmtCpu = (s: number | undefined) => (s === undefined ? '—' : `${s.toFixed(1)} s`);
const fmtTree = (t: Awaited<ReturnType<typeof tree>>) =>
  t
    ? `RSS ${fmtKiB(t.rssKiB)}, PSS ${fmtKiB(t.pssKiB)} (${t.processes.length} processes: ${describeTree(t, fmtKiB)})`
    : '—';

// ---------------------------------------------------------------------------------------------
// setup

async function connect(): Promise<void> {
  const r = await client.get('/1.0').catch((e: unknown) => {
    throw new Error(`cannot reach ${opts.socket}: ${e instanceof Error ? e.message : String(e)}`);
  });
  if (r.status !== 200) throw new Error(`GET /1.0: HTTP ${r.status} ${errorText(r)}`);
  const m = r.json?.metadata ?? {};
  if (m.auth !== 'trusted')
    throw new Error(`GET /1.0 says auth=${m.auth}: the bench needs a trusted (unix socket) connection`);
  const env = m.environment ?? {};
  results.server = {
    name: String(env.server ?? 'unknown'),
    version: String(env.server_version ?? '?'),
    driver: env.driver,
    driverVersion: env.driver_version,
    storage: env.storage,
  };
  if (!results.label) results.label = results.server.name;
  // The daemon pid: --pid, else the server's own word (environment.server_pid), else a lone `lxd`.
  const candidates: number[] = [];
  if (opts.pid) candidates.push(Number(opts.pid));
  if (Number.isInteger(env.server_pid) && env.server_pid > 0) candidates.push(env.server_pid);
  if (results.server.name === 'lxd') candidates.push(...(await findDaemonPids('lxd')));
  for (const c of candidates) {
    if (Number.isInteger(c) && c > 0 && (await processName(c)) !== undefined) {
      pid = c;
      break;
    }
  }
  if (opts.pid && pid !== Number(opts.pid))
    warn(`api-bench: --pid ${opts.pid} is not a running process; RSS from ${pid ?? 'nowhere'}`);
  if (pid && Number.isInteger(env.server_pid) && env.server_pid !== pid)
    warn(`api-bench: the server says its pid is ${env.server_pid}, RSS is read from ${pid}`);
  results.server.pid = pid;
}

/** The bench only creates containers without network: refuse a default profile that has a nic. */
async function checkDefaultProfile(): Promise<void> {
  const r = await client.get('/1.0/profiles/default');
  if (r.status !== 200) throw new Error(`GET /1.0/profiles/default: HTTP ${r.status} ${errorText(r)}`);
  const devices: Record<string, Record<string, string>> = r.json?.metadata?.devices ?? {};
  const nics = Object.entries(devices).filter(([, d]) => d.type !== 'disk');
  if (nics.length > 0)
    throw new Error(
      `the default profile has non-disk devices (${nics.map(([n, d]) => `${n}: ${d.type}`).join(', ')}); ` +
        'the bench only runs with a default profile that has a root disk and no network device',
    );
  if (!Object.values(devices).some((d) => d.type === 'disk' && d.path === '/'))
    throw new Error('the default profile has no root disk device (path /)');
}

async function ensureImage(): Promise<void> {
  if (opts.image) {
    const ref = opts.image;
    const isFingerprint = /^[0-9a-f]{12,64}$/i.test(ref);
    const r = await client.get(isFingerprint ? `/1.0/images/${ref}` : `/1.0/images/aliases/${encodeURIComponent(ref)}`);
    if (r.status !== 200) throw new Error(`image ${ref}: HTTP ${r.status} ${errorText(r)}`);
    imageSource = isFingerprint ? { type: 'image', fingerprint: ref } : { type: 'image', alias: ref };
    results.image = { ref, imported: false, fingerprint: isFingerprint ? ref : r.json?.metadata?.target };
    return;
  }
  imageSource = { type: 'image', alias: IMAGE_ALIAS };
  const existing = await client.get(`/1.0/images/aliases/${IMAGE_ALIAS}`);
  if (existing.status === 200) {
    results.image = { ref: IMAGE_ALIAS, imported: false, fingerprint: existing.json?.metadata?.target };
    return;
  }
  let file = opts['image-file'];
  if (!file) {
    tempDir = await mkdtemp(path.join(os.tmpdir(), 'bench-image-'));
    // Imported lazily: the builder lives with the integration support code.
    const { buildBusyboxImage } = await import('../integration/support/busybox-image.ts');
    const img = await buildBusyboxImage({ dir: tempDir, format: 'unified', compression: 'gzip' });
    if (img.format !== 'unified') throw new Error('expected a unified image');
    file = img.file;
  }
  const up = await uploadImageFile(client, file, IMAGE_ALIAS, opTimeoutMs);
  results.image = {
    ref: IMAGE_ALIAS,
    imported: up.imported,
    fingerprint: up.fingerprint,
    file,
    ...(up.importMs !== undefined ? { importMs: up.importMs } : {}),
  };
  if (up.imported) importedFingerprint = up.fingerprint;
  createdAlias = true;
}

async function listNames(): Promise<{ name: string; status_code: number }[]> {
  const r = await client.get(LIST_PATH);
  if (r.status !== 200 || !Array.isArray(r.json?.metadata))
    throw new Error(`GET ${LIST_PATH}: HTTP ${r.status} ${errorText(r)}`);
  return r.json.metadata.map((c: any) => ({ name: String(c.name), status_code: Number(c.status_code) }));
}

// ---------------------------------------------------------------------------------------------
// GET load

async function getCell(what: GetCell['what'], concurrency: number, containers: number): Promise<GetCell> {
  const p = what === 'server' ? '/1.0' : LIST_PATH;
  for (let i = 0; i < 3; i++) await client.get(p).catch(() => undefined); // warm-up, also opens the connection
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let listed: number | undefined;
  let bodyBytes = 0;
  let issued = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  const worker = async () => {
    while (!aborting && performance.now() < deadline && issued < MAX_REQUESTS_PER_CELL) {
      issued++;
      try {
        const r = await client.get(p);
        if (r.status === 200) {
          lat.push(r.ms);
          bodyBytes = Buffer.byteLength(r.text);
          if (what === 'list' && Array.isArray(r.json?.metadata)) listed = r.json.metadata.length;
        } else {
          errors++;
          firstError ??= `HTTP ${r.status}: ${errorText(r)}`;
        }
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  return {
    what,
    path: p,
    containers,
    ...(listed !== undefined ? { listed } : {}),
    concurrency,
    requests: lat.length + errors,
    errors,
    ...(firstError ? { firstError } : {}),
    seconds,
    rps: lat.length / seconds,
    latency: summarize(lat),
    bodyBytes,
  };
}

async function getPhase(containers: number): Promise<void> {
  for (const what of ['server', 'list'] as const) {
    for (const c of concurrencies) {
      checkAbort();
      const cell = await getCell(what, c, containers);
      results.get.push(cell);
      log(
        `  GET ${cell.path.padEnd(LIST_PATH.length)}  containers=${String(containers).padStart(3)}  c=${String(c).padStart(2)}  ` +
          `${fmtRate(cell.rps).padStart(6)} req/s  median ${fmtMs(cell.latency.median)}  p95 ${fmtMs(cell.latency.p95)}  p99 ${fmtMs(cell.latency.p99)}` +
          `${cell.listed !== undefined ? `  (${cell.listed} listed, ${(cell.bodyBytes / 1024).toFixed(0)} KiB)` : ''}` +
          `${cell.errors ? `  ERRORS ${cell.errors}: ${cell.firstError}` : ''}`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// container operations

const create = (name: string) =>
  client.operation('POST', '/1.0/containers', { name, profiles: ['default'], source: imageSource }, opTimeoutMs);
const start = (name: string) =>
  client.operation('PUT', `/1.0/containers/${name}/state`, { action: 'start', timeout: -1 }, opTimeoutMs);
const stopForce = (name: string) =>
  client.operation('PUT', `/1.0/containers/${name}/state`, { action: 'stop', force: true, timeout: -1 }, opTimeoutMs);
const remove = (name: string) => client.operation('DELETE', `/1.0/containers/${name}`, undefined, opTimeoutMs);
const exec = (name: string) =>
  client.operation(
    'POST',
    `/1.0/containers/${name}/exec`,
    { command: ['true'], environment: {}, 'wait-for-websocket': false, interactive: false },
    opTimeoutMs,
  );
/** The same through websockets (fds 0, 1, 2 and control connected; ends when the output sockets closed). */
const execWs = (name: string) => execOverWebsockets(client, name, ['true'], opTimeoutMs);

function step(): StepStats & { samples: number[] } {
  return { ok: 0, failed: 0, errors: [], samples: [] };
}
function record(s: ReturnType<typeof step>, r: OperationResult): boolean {
  if (r.ok) {
    s.ok++;
    s.samples.push(r.ms);
  } else {
    s.failed++;
    if (s.errors.length < 5) s.errors.push(r.error ?? 'unknown error');
  }
  return r.ok;
}
function finish(s: ReturnType<typeof step>): StepStats {
  const { samples, ...rest } = s;
  return { ...rest, ...(samples.length ? { latency: summarize(samples) } : {}) };
}

/** The container must have no network device (safety: nothing may reach a network). */
async function assertNoNic(name: string): Promise<void> {
  const r = await client.get(`/1.0/containers/${name}`);
  const devices: Record<string, { type?: string }> = r.json?.metadata?.expanded_devices ?? {};
  const nics = Object.entries(devices).filter(([, d]) => d.type === 'nic' || d.type === 'infiniband');
  if (nics.length)
    throw new Error(`container ${name} has network devices (${nics.map(([n]) => n).join(', ')}): refusing to go on`);
}

/**
 * File push/pull through `/1.0/containers/<name>/files` on the running container: 1 KiB (20 times)
 * and 64 MiB (3 times) each way; median latency and throughput (MB/s, 10^6 bytes). Pulls are
 * streamed and counted, never decoded. Figures go to the log and to `files` in the JSON results.
 */
async function filesBench(name: string): Promise<void> {
  const filesPath = (p: string) => `/1.0/containers/${encodeURIComponent(name)}/files?path=${encodeURIComponent(p)}`;
  const pull = (p: string) =>
    new Promise<{ status: number; bytes: number; ms: number }>((resolve, reject) => {
      const started = performance.now();
      const req = http.request(
        {
          socketPath: client.socketPath,
          agent: client.agent,
          method: 'GET',
          path: filesPath(p),
          headers: { Host: 'localhost' },
        },
        (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  const rows: string[][] = [['transfer', 'ok', 'failed', 'median', 'MB/s (median)']];
  const out: FilesResults = {};
  for (const [label, size, rounds] of [
    ['1 KiB', 1024, 20],
    ['64 MiB', 64 * 1024 * 1024, 3],
  ] as const) {
    const data = Buffer.alloc(size, 0x5a);
    const target = `/root/api-bench-${size}`;
    for (const dir of ['push', 'pull'] as const) {
      const samples: number[] = [];
      const errors: string[] = [];
      for (let i = 0; i < rounds; i++) {
        checkAbort();
        if (dir === 'push') {
          const r = await client
            .request('POST', filesPath(target), data, {
              'Content-Type': 'application/octet-stream',
              'X-LXD-type': 'file',
            })
            .catch((e: unknown) => ({ status: 0, text: String(e), ms: 0 }) as const);
          if (r.status === 200) samples.push(r.ms);
          else errors.push(`${r.status} ${r.text.slice(0, 200)}`);
        } else {
          const r = await pull(target).catch((e: unknown) => ({ status: 0, bytes: 0, ms: 0, error: String(e) }));
          if (r.status === 200 && r.bytes === size) samples.push(r.ms);
          else errors.push(`${r.status}, ${r.bytes} of ${size} bytes`);
        }
      }
      const lat = samples.length ? summarize(samples) : undefined;
      const mbPerS = lat ? size / 1e6 / (lat.median / 1000) : undefined;
      out[`${dir} ${label}`] = {
        ok: samples.length,
        failed: errors.length,
        medianMs: lat?.median,
        mbPerS,
        errors: [...new Set(errors)],
      };
      rows.push([
        `${dir} ${label}`,
        String(samples.length),
        String(errors.length),
        fmtMs(lat?.median),
        mbPerS === undefined ? '—' : mbPerS.toFixed(1),
      ]);
      if (errors.length) log(`  files ${dir} ${label} errors: ${[...new Set(errors)].join(' | ')}`);
    }
    await client.request('DELETE', filesPath(target)).catch(() => undefined);
  }
  log(table(rows).replace(/^/gm, '  '));
  results.files = out;
}

/**
 * exec `true` on the running container, `rounds` times each way (without websockets, then with them,
 * alternated), after the file transfers: the round trip of a command on a settled container, which the
 * single rounds (an exec right after its start) measure only once each.
 */
async function execRunningBench(name: string, rounds: number): Promise<void> {
  const s = { exec: step(), execWs: step() };
  for (let i = 0; i < rounds; i++) {
    checkAbort();
    const e = await exec(name);
    record(
      s.exec,
      e.ok && Number(e.op?.metadata?.return) !== 0
        ? { ...e, ok: false, error: `exit status ${e.op?.metadata?.return}` }
        : e,
    );
    const w = await execWs(name);
    record(
      s.execWs,
      w.ok && Number(w.op?.metadata?.return) !== 0
        ? { ...w, ok: false, error: `exit status ${w.op?.metadata?.return}` }
        : w,
    );
  }
  results.execRunning = { rounds, exec: finish(s.exec), execWebsocket: finish(s.execWs) };
  const row = (label: string, st: StepStats) => [
    label,
    String(st.ok),
    String(st.failed),
    fmtMs(st.latency?.median),
    fmtMs(st.latency?.p95),
    fmtMs(st.latency?.max),
  ];
  log(
    table([
      ['exec on the running container', 'ok', 'failed', 'median', 'p95', 'max'],
      row('exec true', results.execRunning.exec),
      row('exec true (websockets)', results.execRunning.execWebsocket),
    ]).replace(/^/gm, '  '),
  );
  for (const [k, st] of Object.entries(results.execRunning))
    if (typeof st === 'object' && st.errors.length)
      log(`  exec on the running container, ${k} errors: ${st.errors.join(' | ')}`);
}

async function singlePhase(): Promise<void> {
  const s = {
    create: step(),
    start: step(),
    createStart: step(),
    exec: step(),
    execWs: step(),
    stop: step(),
    del: step(),
  };
  let execSupported = !opts['skip-exec'];
  let execNote: string | undefined = opts['skip-exec'] ? 'skipped (--skip-exec)' : undefined;
  for (let i = 0; i < iterations; i++) {
    checkAbort();
    const name = nextName();
    created.add(name);
    const c = await create(name);
    record(s.create, c);
    if (!c.ok) {
      warn(`  create ${name} failed: ${c.error}`);
      if ((await client.get(`/1.0/containers/${name}`)).status !== 200) created.delete(name);
      continue;
    }
    if (i === 0) await assertNoNic(name);
    const st = await start(name);
    if (record(s.start, st)) s.createStart.samples.push(c.ms + st.ms), s.createStart.ok++;
    else warn(`  start ${name} failed: ${st.error}`);
    if (st.ok && execSupported) {
      const e = await exec(name);
      if (!e.ok && s.exec.ok === 0 && [400, 404, 405, 501].includes(e.status)) {
        execSupported = false;
        execNote = `not supported (${e.error})`;
        log(`  exec: not supported (${e.error})`);
      } else if (e.ok && Number(e.op?.metadata?.return) !== 0) {
        record(s.exec, { ...e, ok: false, error: `exit status ${e.op?.metadata?.return}` });
      } else record(s.exec, e);
      if (execSupported) {
        const w = await execWs(name);
        if (w.ok && Number(w.op?.metadata?.return) !== 0)
          record(s.execWs, { ...w, ok: false, error: `exit status ${w.op?.metadata?.return}` });
        else record(s.execWs, w);
      }
    }
    if (st.ok && i === 0) {
      await filesBench(name);
      if (execSupported && execRounds > 0) await execRunningBench(name, execRounds);
    }
    if (st.ok) {
      const t = await stopForce(name);
      if (!record(s.stop, t)) warn(`  stop ${name} failed: ${t.error}`);
    }
    const d = await remove(name);
    if (record(s.del, d)) created.delete(name);
    else warn(`  delete ${name} failed: ${d.error}`);
  }
  const single: SingleResults = {
    iterations,
    create: finish(s.create),
    start: finish(s.start),
    createStart: finish(s.createStart),
    exec: { ...finish(s.exec), supported: execSupported, ...(execNote ? { note: execNote } : {}) },
    execWebsocket: { ...finish(s.execWs), supported: execSupported, ...(execNote ? { note: execNote } : {}) },
    stopForce: finish(s.stop),
    delete: finish(s.del),
  };
  results.single = single;
  const rows: string[][] = [['step', 'ok', 'failed', 'median', 'p95', 'p99', 'max']];
  const row = (label: string, st: StepStats) => [
    label,
    String(st.ok),
    String(st.failed),
    fmtMs(st.latency?.median),
    fmtMs(st.latency?.p95),
    fmtMs(st.latency?.p99),
    fmtMs(st.latency?.max),
  ];
  rows.push(row('create', single.create), row('start', single.start), row('create+start', single.createStart));
  if (single.exec.supported)
    rows.push(row('exec true', single.exec), row('exec true (websockets)', single.execWebsocket!));
  else rows.push(['exec true', '—', '—', '—', '—', '—', '—']);
  rows.push(row('stop (force)', single.stopForce), row('delete', single.delete));
  log(table(rows).replace(/^/gm, '  '));
  if (!single.exec.supported) log(`  exec: ${execNote ?? 'not supported'}`);
  for (const [k, st] of Object.entries({
    create: single.create,
    start: single.start,
    exec: single.exec,
    'exec (websockets)': single.execWebsocket!,
    stop: single.stopForce,
    delete: single.delete,
  }))
    if (st.errors.length) log(`  ${k} errors: ${st.errors.join(' | ')}`);
}

function countError(errors: Record<string, number>, phase: string, r: OperationResult): void {
  const text = `${phase}: ${(r.error ?? 'unknown').replace(/bench-\d+/g, 'bench-N').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uuid>')}`;
  errors[text] = (errors[text] ?? 0) + 1;
}

async function bulkPhase(n: number): Promise<void> {
  checkAbort();
  const b: BulkResults = {
    n,
    createStartWallMs: 0,
    createFailed: 0,
    startFailed: 0,
    runningObserved: 0,
    deleteWallMs: 0,
    stopFailed: 0,
    deleteFailed: 0,
    errors: {},
  };
  results.bulk.push(b);
  const names = Array.from({ length: n }, nextName);
  for (const name of names) created.add(name);
  const createLat: number[] = [];
  const startLat: number[] = [];
  const started = new Set<string>();
  const cpu0 = await daemonCpuSeconds();
  const t0 = performance.now();
  let creating = n;
  await track(
    Promise.all(
      names.map(async (name) => {
        const c = await create(name);
        if (--creating === 0) b.createsWallMs = performance.now() - t0;
        if (!c.ok) return void (b.createFailed++, countError(b.errors, 'create', c));
        createLat.push(c.ms);
        if (aborting) return;
        const s = await start(name);
        if (!s.ok) return void (b.startFailed++, countError(b.errors, 'start', s));
        startLat.push(s.ms);
        started.add(name);
      }),
    ),
  );
  b.createStartWallMs = performance.now() - t0;
  b.createStartCpuS = await cpuSince(cpu0);
  if (createLat.length) b.createLatency = summarize(createLat);
  if (startLat.length) b.startLatency = summarize(startLat);
  const mine = new Set(names);
  const listed = await listNames().catch(() => []);
  b.runningObserved = listed.filter((c) => mine.has(c.name) && c.status_code === 103).length;
  log(
    `  ${n} creates+starts at once: wall ${fmtMs(b.createStartWallMs)}  failed create ${b.createFailed}, start ${b.startFailed}  ` +
      `running ${b.runningObserved}/${n}  (per container: create median ${fmtMs(b.createLatency?.median)} p95 ${fmtMs(b.createLatency?.p95)}, ` +
      `start median ${fmtMs(b.startLatency?.median)} p95 ${fmtMs(b.startLatency?.p95)}; the last create answered at ${fmtMs(b.createsWallMs)}; ` +
      `daemon process CPU ${fmtCpu(b.createStartCpuS)})`,
  );
  checkAbort();
  await getPhase(n);
  const running = await tree();
  b.rssRunningKiB = running?.rssKiB;
  b.pssRunningKiB = running?.pssKiB;
  b.treeRunning = running && describeTree(running, fmtKiB);
  log(`  daemon tree with ${n} running: ${fmtTree(running)}`);
  checkAbort();
  const cpu1 = await daemonCpuSeconds();
  const t1 = performance.now();
  await track(
    Promise.all(
      names.map(async (name) => {
        if (started.has(name)) {
          const s = await stopForce(name);
          if (!s.ok) b.stopFailed++, countError(b.errors, 'stop', s);
        }
        if (!listed.some((c) => c.name === name) && !started.has(name)) {
          // never created (create failed): nothing to delete
          if ((await client.get(`/1.0/containers/${name}`)).status === 404) return void created.delete(name);
        }
        const d = await remove(name);
        if (d.ok) created.delete(name);
        else b.deleteFailed++, countError(b.errors, 'delete', d);
      }),
    ),
  );
  b.deleteWallMs = performance.now() - t1;
  b.deleteCpuS = await cpuSince(cpu1);
  b.rssAfterDeleteKiB = await rss();
  log(
    `  ${n} force stops+deletes at once: wall ${fmtMs(b.deleteWallMs)} (daemon process CPU ${fmtCpu(b.deleteCpuS)})  failed stop ${b.stopFailed}, delete ${b.deleteFailed}`,
  );
  if (pid) {
    const after = await settled(tree, settleMs);
    b.rssAfterDeleteSettledKiB = after?.rssKiB;
    b.pssAfterDeleteSettledKiB = after?.pssKiB;
    log(
      `  daemon tree after deleting them: RSS ${fmtKiB(b.rssAfterDeleteKiB)} at once; after ${settleMs / 1000} s ${fmtTree(after)}`,
    );
  }
  const errs = Object.entries(b.errors).sort((x, y) => y[1] - x[1]);
  for (const [text, count] of errs.slice(0, 8)) log(`  ${count}× ${text}`);
}

// ---------------------------------------------------------------------------------------------
// cleanup

let cleanupPromise: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleanupPromise ??= (async () => {
    if (inflight.size > 0) {
      // Let creates that are on their way land, so they can be deleted too (bounded).
      await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, 60_000))]);
    }
    for (let pass = 0; pass < 3 && created.size > 0; pass++) {
      const present = await listNames().catch(() => undefined);
      const targets = present
        ? present.filter((c) => created.has(c.name))
        : [...created].map((name) => ({ name, status_code: 0 }));
      if (present) for (const name of [...created]) if (!present.some((c) => c.name === name)) created.delete(name);
      if (targets.length === 0) break;
      if (pass === 0 && aborting) warn(`api-bench: deleting ${targets.length} bench container(s)…`);
      await Promise.all(
        targets.map(async (c) => {
          if (c.status_code !== 102) await stopForce(c.name);
          const d = await remove(c.name);
          if (d.ok || d.status === 404) created.delete(c.name);
        }),
      );
    }
    results.leftovers = [...created];
    if (results.leftovers.length) warn(`api-bench: could not delete: ${results.leftovers.join(', ')}`);
    if (createdAlias) await client.request('DELETE', `/1.0/images/aliases/${IMAGE_ALIAS}`).catch(() => undefined);
    if (importedFingerprint) {
      const r = await client.operation('DELETE', `/1.0/images/${importedFingerprint}`, undefined, 60_000);
      if (!r.ok) warn(`api-bench: could not delete the image ${importedFingerprint}: ${r.error}`);
    }
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
  })();
  return cleanupPromise;
}

function onSignal(signal: NodeJS.Signals): void {
  if (aborting) {
    warn(
      `api-bench: ${signal} again: exiting without finishing the cleanup (left: ${[...created].join(', ') || 'nothing'})`,
    );
    process.exit(130);
  }
  aborting = `interrupted by ${signal}`;
  results.aborted = aborting;
  warn(`api-bench: ${signal}: stopping, deleting the containers this run created…`);
  cleanup()
    .catch((e: unknown) => warn(`api-bench: cleanup failed: ${String(e)}`))
    .finally(() => {
      client.close();
      process.exit(130);
    });
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  await connect();
  log(
    `== api-bench: ${results.label} — ${results.server.name} ${results.server.version} on ${opts.socket} (pid ${pid ?? '?'})`,
  );
  const start = await tree();
  results.rss.startKiB = start?.rssKiB;
  results.rss.startPssKiB = start?.pssKiB;
  await checkDefaultProfile();
  const stale = (await listNames()).filter((c) => /^bench-\d+$/.test(c.name));
  if (stale.length)
    throw new Error(`bench containers already exist (${stale.map((c) => c.name).join(', ')}); delete them first`);
  let failed = false;
  try {
    await ensureImage();
    log(
      `image: ${results.image.ref} ${results.image.fingerprint?.slice(0, 12) ?? ''}` +
        (results.image.imported ? ` (uploaded in ${fmtMs(results.image.importMs)})` : ' (already present)'),
    );
    log(`daemon tree at start: ${fmtTree(start)}`);
    if (counts.includes(0)) {
      log('\n-- GET with 0 bench containers');
      await notePhase('GET, 0 containers');
      await getPhase(0);
    }
    if (iterations > 0) {
      log(`\n-- single container, ${iterations} rounds (operation latency: request to final state)`);
      await notePhase('single container');
      await singlePhase();
    }
    if (pid) {
      const idle = await settled(tree, settleMs);
      results.rss.idleKiB = idle?.rssKiB;
      results.rss.idlePssKiB = idle?.pssKiB;
      results.rss.idleTree = idle && describeTree(idle, fmtKiB);
      log(`\ndaemon tree idle (0 containers, after ${settleMs / 1000} s): ${fmtTree(idle)}`);
    }
    for (const n of counts.filter((x) => x > 0)) {
      log(`\n-- ${n} containers`);
      await notePhase(`${n} containers`);
      await bulkPhase(n);
    }
  } catch (e) {
    failed = true;
    if (!(e instanceof Aborted)) {
      results.aborted = e instanceof Error ? e.message : String(e);
      warn(`api-bench: stopped: ${results.aborted}`);
    }
  } finally {
    await cleanup();
  }
  results.finishedAt = new Date().toISOString();
  results.clientRetries = client.retries;
  summary();
  if (opts.json) await writeFile(opts.json, `${JSON.stringify(results, null, 2)}\n`);
  return failed || results.leftovers.length ? 1 : 0;
}

/** The figures the targets are about, plus the one target a single run can judge (RSS). */
function summary(): void {
  log(`\n== summary: ${results.label}`);
  const listAt = results.get.filter((g) => g.what === 'list');
  for (const g of listAt)
    log(
      `  list ${String(g.containers).padStart(3)} containers, c=${String(g.concurrency).padStart(2)}: ${fmtRate(g.rps)} req/s (p95 ${fmtMs(g.latency.p95)})`,
    );
  const s = results.single;
  if (s) {
    log(`  create+start median ${fmtMs(s.createStart.latency?.median)}, p95 ${fmtMs(s.createStart.latency?.p95)}`);
    log(`  stop (force) median ${fmtMs(s.stopForce.latency?.median)}, p95 ${fmtMs(s.stopForce.latency?.p95)}`);
    log(
      `  exec: ${s.exec.supported ? `median ${fmtMs(s.exec.latency?.median)}, p95 ${fmtMs(s.exec.latency?.p95)}` : (s.exec.note ?? 'not supported')}`,
    );
    if (s.exec.supported && s.execWebsocket)
      log(
        `  exec with websockets: median ${fmtMs(s.execWebsocket.latency?.median)}, p95 ${fmtMs(s.execWebsocket.latency?.p95)}`,
      );
  }
  for (const b of results.bulk)
    log(
      `  ${b.n} concurrent creates+starts: ${fmtMs(b.createStartWallMs)} (creates ${fmtMs(b.createsWallMs)}, daemon CPU ${fmtCpu(b.createStartCpuS)}), ${b.createFailed + b.startFailed} failed; ` +
        `deletes: ${fmtMs(b.deleteWallMs)} (daemon CPU ${fmtCpu(b.deleteCpuS)}), ${b.stopFailed + b.deleteFailed} failed`,
    );
  const idle = results.rss.idleKiB;
  log(
    `  tree RSS/PSS: start ${fmtKiB(results.rss.startKiB)}/${fmtKiB(results.rss.startPssKiB)}, idle ${fmtKiB(idle)}/${fmtKiB(results.rss.idlePssKiB)}`,
  );
  const last = results.bulk[results.bulk.length - 1];
  if (last && idle && last.rssAfterDeleteSettledKiB) {
    const ratio = last.rssAfterDeleteSettledKiB / idle;
    log(
      `  tree RSS at ${last.n} running ${fmtKiB(last.rssRunningKiB)}, after deleting them ${fmtKiB(last.rssAfterDeleteSettledKiB)} ` +
        `(${((ratio - 1) * 100).toFixed(1)}% vs idle): ${ratio <= 1.1 ? 'PASS' : 'MISS'} (the target for svcd: within 10% of idle)`,
    );
  }
  if (results.clientRetries)
    log(`  requests resent after a kept-alive connection was closed by the server: ${results.clientRetries}`);
  log(
    `  load average when each phase began: ${results.load.map((l) => `${l.phase} ${l.loadavg[0].toFixed(2)}`).join(', ')}`,
  );
  if (results.leftovers.length) log(`  LEFTOVER containers: ${results.leftovers.join(', ')}`);
  if (results.aborted) log(`  run stopped early: ${results.aborted}`);
}

main()
  .then((code) => {
    client.close();
    process.exitCode = code;
  })
  .catch(async (e: unknown) => {
    warn(`api-bench: ${e instanceof Error ? e.message : String(e)}`);
    await cleanup().catch(() => {});
    client.close();
    process.exitCode = 1;
  });
