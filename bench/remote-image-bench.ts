/**
 * Launching from a remote image, for any server speaking the LXD-style REST API on a unix socket (svcd,
 * or LXD 5.0.2 for comparison); a script that prints figures and asserts nothing. The remote is the
 * simplestreams test server (integration/support/simplestreams-server.ts) started here on 127.0.0.1 over
 * HTTPS with a self-signed certificate the pull pins; so this must run in the daemon's network namespace
 * with loopback up (bench/compare.sh --remote-images runs it with nsenter there). Nothing leaves the machine.
 *
 *   node --import tsx bench/remote-image-bench.ts --socket <path> [--rounds 3] [--concurrent 50]
 *        [--kind squashfs|unified|rootxz] [--label NAME] [--json <out.json>]
 *
 * Phases (a launch = create from `source` + start; each container is stopped and deleted after):
 *  1. uncached: `--rounds` times, a new server (a new URL: LXD caches a stream's index per URL for an
 *     hour, so a new version on the same server would not be seen) with a new image, launched by alias;
 *  2. cached: the last version launched again by alias (the image is in the server's cache now), and,
 *     alternately, a local launch of that same image by fingerprint — the two should be the same;
 *  3. concurrent: a new server, `--concurrent` launches at once by alias: wall time, failures, and how
 *     many times the server sent each file of the image (1 = one download).
 * The images pulled are deleted at the end.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startSimplestreamsServer, type SimplestreamsServer } from '../integration/support/simplestreams-server.ts';
import type { StreamItemKind, StreamVersion } from '../integration/support/simplestreams-tree.ts';
import { fmtMs, summarize, table, type LatencyStats } from './lib/stats.ts';
import { errorText, UnixClient } from './lib/unix-client.ts';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    concurrent: { type: 'string', default: '50' },
    kind: { type: 'string', default: 'squashfs' },
    label: { type: 'string', default: 'server' },
    json: { type: 'string' },
  },
  strict: true,
});
const kind = opts.kind as StreamItemKind;
if (!opts.socket || !['squashfs', 'unified', 'rootxz'].includes(kind)) {
  process.stderr.write(
    'usage: remote-image-bench.ts --socket <path> [--rounds N] [--concurrent N] [--kind squashfs|unified|rootxz] [--label L] [--json F]\n',
  );
  process.exit(2);
}
const OP_MS = 600_000;
const client = new UnixClient(opts.socket, OP_MS);
const log = (s: string) => process.stdout.write(`${s}\n`);

export interface LaunchFigures {
  ok: number;
  failed: number;
  errors: string[];
  launch?: LatencyStats;
  create?: LatencyStats;
}

export interface RemoteImageBenchResults {
  label: string;
  kind: StreamItemKind;
  imageBytes: number;
  uncached: LaunchFigures;
  cached: LaunchFigures;
  local: LaunchFigures;
  concurrent?: {
    n: number;
    failed: number;
    wallMs: number;
    downloads: Record<string, number>;
    errors: Record<string, number>;
  };
  leftovers: string[];
}

interface Launch {
  ok: boolean;
  createMs: number;
  launchMs: number;
  error?: string;
}

async function launch(name: string, source: Record<string, unknown>): Promise<Launch> {
  const c = await client.operation('POST', '/1.0/containers', { name, profiles: ['default'], source }, OP_MS);
  if (!c.ok) return { ok: false, createMs: c.ms, launchMs: c.ms, error: `create: ${c.error}` };
  const s = await client.operation('PUT', `/1.0/containers/${name}/state`, { action: 'start', timeout: -1 }, OP_MS);
  return { ok: s.ok, createMs: c.ms, launchMs: c.ms + s.ms, ...(s.ok ? {} : { error: `start: ${s.error}` }) };
}

async function remove(name: string): Promise<boolean> {
  const r = await client.get(`/1.0/containers/${name}`);
  if (r.status === 404) return true;
  await client.operation('PUT', `/1.0/containers/${name}/state`, { action: 'stop', force: true, timeout: -1 }, OP_MS);
  const d = await client.operation('DELETE', `/1.0/containers/${name}`, undefined, OP_MS);
  return d.ok;
}

function figures(runs: Launch[]): LaunchFigures {
  const good = runs.filter((r) => r.ok);
  return {
    ok: good.length,
    failed: runs.length - good.length,
    errors: [...new Set(runs.flatMap((r) => (r.error ? [r.error] : [])))],
    ...(good.length
      ? { launch: summarize(good.map((r) => r.launchMs)), create: summarize(good.map((r) => r.createMs)) }
      : {}),
  };
}

/** How often the server sent each file of the version's image (by file name). */
function downloadsOf(v: StreamVersion, requests: (p: string) => number): Record<string, number> {
  const files =
    kind === 'unified' ? [v.files.unified] : [v.files.meta, kind === 'squashfs' ? v.files.squashfs : v.files.rootxz];
  return Object.fromEntries(files.map((f) => [f!.path.split('/').pop()!, requests(`/${f!.path}`)]));
}

async function main(): Promise<void> {
  const info = await client.get('/1.0');
  if (info.status !== 200) throw new Error(`GET /1.0: HTTP ${info.status} ${errorText(info)}`);
  const servers: SimplestreamsServer[] = [];
  const newRemote = async () => {
    const ss = await startSimplestreamsServer({ kinds: [kind], alias: 'bench-remote' });
    servers.push(ss);
    const source = {
      type: 'image',
      mode: 'pull',
      server: ss.url,
      protocol: 'simplestreams',
      alias: 'bench-remote',
      certificate: ss.certificate,
    };
    return { ss, source, fingerprint: ss.latest().fingerprints[kind]! };
  };
  const containers = new Set<string>();
  const results: RemoteImageBenchResults = {
    label: opts.label,
    kind,
    imageBytes: 0,
    uncached: figures([]),
    cached: figures([]),
    local: figures([]),
    leftovers: [],
  };
  const run = async (name: string, src: Record<string, unknown>) => {
    containers.add(name);
    const r = await launch(name, src);
    if (await remove(name)) containers.delete(name);
    return r;
  };
  try {
    const rounds = Number(opts.rounds);
    log(`[${opts.label}] simplestreams remotes on 127.0.0.1 (${kind} items), ${rounds} round(s)`);
    const uncached: Launch[] = [];
    let remote = await newRemote();
    for (let i = 0; i < rounds; i++) {
      if (i > 0) remote = await newRemote();
      uncached.push(await run(`rib-u${i}`, remote.source));
    }
    results.uncached = figures(uncached);
    const { source, fingerprint } = remote;
    results.imageBytes = Object.values(remote.ss.latest().files).reduce((a, f) => a + (f?.size ?? 0), 0);
    const cached: Launch[] = [];
    const local: Launch[] = [];
    for (let i = 0; i < rounds; i++) {
      cached.push(await run(`rib-c${i}`, source));
      local.push(await run(`rib-l${i}`, { type: 'image', fingerprint }));
    }
    results.cached = figures(cached);
    results.local = figures(local);

    const n = Number(opts.concurrent);
    if (n > 0) {
      const { ss, source: fresh } = await newRemote();
      const names = Array.from({ length: n }, (_, i) => `rib-n${i}`);
      names.forEach((x) => containers.add(x));
      const t0 = performance.now();
      const all = await Promise.all(names.map((x) => launch(x, fresh)));
      const wallMs = performance.now() - t0;
      const errors: Record<string, number> = {};
      for (const r of all) if (r.error) errors[r.error] = (errors[r.error] ?? 0) + 1;
      results.concurrent = {
        n,
        failed: all.filter((r) => !r.ok).length,
        wallMs,
        downloads: downloadsOf(ss.latest(), ss.requests),
        errors,
      };
      await Promise.all(names.map(async (x) => (await remove(x)) && containers.delete(x)));
    }
  } finally {
    for (const x of containers) if (!(await remove(x))) results.leftovers.push(x);
    const imgs = await client.get('/1.0/images?recursion=1');
    for (const img of (imgs.json?.metadata ?? []) as { fingerprint: string; update_source?: { server?: string } }[]) {
      if (servers.some((ss) => ss.url === img.update_source?.server))
        await client.operation('DELETE', `/1.0/images/${img.fingerprint}`, undefined, OP_MS);
    }
    for (const ss of servers) await ss.close();
    client.close();
  }
  print(results);
  if (opts.json) await writeFile(opts.json, JSON.stringify(results, null, 2));
}

function print(r: RemoteImageBenchResults): void {
  const row = (what: string, f: LaunchFigures) => [
    what,
    `${f.ok}/${f.ok + f.failed}`,
    fmtMs(f.create?.median),
    fmtMs(f.launch?.median),
    fmtMs(f.launch?.max),
  ];
  log(
    table([
      ['launch', 'ok', 'create median', 'launch median', 'launch max'],
      row('uncached (pull)', r.uncached),
      row('cached (by alias)', r.cached),
      row('local (by fingerprint)', r.local),
    ]),
  );
  if (r.concurrent) {
    const c = r.concurrent;
    log(
      `${c.n} concurrent launches of one uncached image: ${fmtMs(c.wallMs)} wall, ${c.failed} failed, sent per file: ${Object.entries(
        c.downloads,
      )
        .map(([f, k]) => `${f} ×${k}`)
        .join(', ')}`,
    );
  }
  for (const e of new Set([
    ...r.uncached.errors,
    ...r.cached.errors,
    ...r.local.errors,
    ...Object.keys(r.concurrent?.errors ?? {}),
  ]))
    log(`  error: ${e}`);
  if (r.leftovers.length) log(`  left behind: ${r.leftovers.join(', ')}`);
}

await main();
