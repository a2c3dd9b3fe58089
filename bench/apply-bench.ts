/**
 * `svcd apply` against the same work sent straight to the API, and `svcd diff` on a converged host. A
 * script run by hand that prints figures; it asserts nothing but the runs' success.
 *
 *   node --import tsx bench/apply-bench.ts --socket <dir>/unix.socket --image-file <unified tarball>
 *        [--n 100] [--concurrency 10] [--rounds 2] [--diff-runs 5] [--svcd "node dist/cli/svcd.js"]
 *
 * 1. direct: N containers (busybox, the default profile) created then started, `--concurrency` at a
 *    time, over one keep-alive client: wall time; then all deleted (not timed);
 * 2. apply: a document naming N such containers, `svcd apply -f doc --parallel <concurrency>` as a
 *    process: wall time, from spawn to exit (its node start-up included), and the ratio to 1;
 *    `--rounds`: 1 and 2 again, the order swapped each round (the second one of a pair runs on a
 *    host the first has just warmed), all but the last round's apply deleted again;
 * 3. diff: `svcd diff -f doc` on the converged host, `--diff-runs` times: each run's wall time, and the
 *    plan alone (read + compute, in this process) without the command's start-up;
 * 4. the start-up of the command itself (`svcd version`), to read 2 and 3 against.
 * Every container the run made is deleted at the end, also on failure. The server may be svcd or LXD
 * (the svcd command reaches LXD's socket as well).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { createApiClient } from '../src/cli/declare/api-client.ts';
import { parseDocument } from '../src/cli/declare/parse-document.ts';
import { planDeclaration } from '../src/cli/declare/run-declaration.ts';
import { uploadImageFile } from './lib/image-upload.ts';
import { fmtMs } from './lib/stats.ts';
import { UnixClient } from './lib/unix-client.ts';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    'image-file': { type: 'string' },
    n: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '10' },
    'diff-runs': { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    svcd: {
      type: 'string',
      default: `${process.execPath} --import tsx ${path.resolve(import.meta.dirname, '../src/cli/svcd.ts')}`,
    },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (opts.help || !opts.socket || !opts['image-file'] || path.basename(opts.socket) !== 'unix.socket') {
  process.stderr.write(
    'usage: node --import tsx bench/apply-bench.ts --socket <dir>/unix.socket --image-file <tarball> [--n 100] [--concurrency 10] [--diff-runs 5] [--svcd CMD]\n',
  );
  process.exit(opts.help ? 0 : 2);
}
const n = Number(opts.n);
const concurrency = Number(opts.concurrency);
const diffRuns = Number(opts['diff-runs']);
const rounds = Number(opts.rounds);
const stateDir = path.dirname(opts.socket);
const client = new UnixClient(opts.socket);
const log = (s = '') => process.stdout.write(`${s}\n`);
const ALIAS = 'apply-bench';
const OP_TIMEOUT = 300_000;

/** Run `svcd args` as a process against the socket's directory: exit code, output and wall time. */
function svcd(args: string[]): Promise<{ code: number | null; out: string; err: string; ms: number }> {
  const [cmd, ...pre] = opts.svcd!.split(' ');
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(cmd!, [...pre, ...args], {
      env: { ...process.env, SVCD_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out, err, ms: performance.now() - started }));
  });
}

async function pool<T>(items: T[], width: number, each: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

async function must(method: string, url: string, body: unknown = undefined) {
  const r = await client.operation(method, url, body, OP_TIMEOUT);
  if (!r.ok) throw new Error(`${method} ${url}: ${r.error}`);
}

async function launch(name: string) {
  await must('POST', '/1.0/containers', { name, source: { type: 'image', alias: ALIAS }, profiles: ['default'] });
  await must('PUT', `/1.0/containers/${name}/state`, { action: 'start', timeout: 30 });
}

async function removeAll(prefix: string) {
  const list = await client.get('/1.0/containers');
  const names = ((list.json?.metadata ?? []) as string[])
    .map((u) => u.split('/').pop()!)
    .filter((c) => c.startsWith(prefix));
  await pool(names, concurrency, async (c) => {
    await client.operation('PUT', `/1.0/containers/${c}/state`, { action: 'stop', force: true }, OP_TIMEOUT);
    await client.operation('DELETE', `/1.0/containers/${c}`, undefined, OP_TIMEOUT);
  });
}

const names = (prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);

async function main() {
  const server = (await client.get('/1.0')).json?.metadata?.environment?.server ?? '?';
  await uploadImageFile(client, opts['image-file']!, ALIAS, OP_TIMEOUT).catch(async (e) => {
    // An alias left by an earlier run is fine.
    if (!String(e).includes('alias')) throw e;
  });
  const work = await mkdtemp(path.join(os.tmpdir(), 'apply-bench-'));
  try {
    log(
      `apply-bench: ${server}, ${n} containers, concurrency ${concurrency}, load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    // Warm-up: the image unpacked into the pool once, outside both timings.
    await launch('ab-warm');
    await removeAll('ab-warm');

    const docFile = path.join(work, 'doc.yaml');
    const doc = { containers: names('ab-a-').map((name) => ({ name, source: { type: 'image', alias: ALIAS } })) };
    await writeFile(docFile, stringify(doc));
    const direct = async () => {
      const t0 = performance.now();
      await pool(names('ab-d-'), concurrency, launch);
      const ms = performance.now() - t0;
      await removeAll('ab-d-');
      return ms;
    };
    const apply = async () => {
      const r = await svcd(['apply', '-f', docFile, '--parallel', String(concurrency)]);
      if (r.code !== 0) throw new Error(`svcd apply exited ${r.code}: ${r.err}`);
      if (!r.out.includes(`${n} to add, 0 to change, 0 to delete`)) throw new Error(`svcd apply planned: ${r.out}`);
      return r.ms;
    };
    for (let round = 0; round < rounds; round++) {
      if (round > 0) await removeAll('ab-a-');
      const applyFirst = round % 2 === 1;
      let applyMs = applyFirst ? await apply() : 0;
      const directMs = await direct();
      if (!applyFirst) applyMs = await apply();
      log(
        `round ${round + 1} (${applyFirst ? 'apply first' : 'direct first'}): direct create+start ${fmtMs(directMs)}, ` +
          `svcd apply ${fmtMs(applyMs)} (${(applyMs / directMs).toFixed(2)}× direct)`,
      );
    }

    const diffs: number[] = [];
    for (let i = 0; i < diffRuns; i++) {
      const d = await svcd(['diff', '-f', docFile]);
      if (d.code !== 0) throw new Error(`svcd diff exited ${d.code} on a converged host: ${d.out}${d.err}`);
      diffs.push(d.ms);
    }
    const api = createApiClient({ socketPath: opts.socket! });
    const planMs: number[] = [];
    for (let i = 0; i < diffRuns; i++) {
      const p0 = performance.now();
      await planDeclaration(api, parseDocument(stringify(doc), 'apply'), { mode: 'apply', prune: true });
      planMs.push(performance.now() - p0);
    }
    api.close();
    const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
    const median = (a: number[]) => sorted(a)[Math.floor(a.length / 2)]!;
    log(`svcd diff (process): median ${fmtMs(median(diffs))}, runs ${diffs.map(fmtMs).join(' ')}`);
    log(`diff plan alone:     median ${fmtMs(median(planMs))}, runs ${planMs.map(fmtMs).join(' ')}`);
    const startup = await svcd(['version']);
    log(`svcd version (start-up of the command): ${fmtMs(startup.ms)}`);
  } finally {
    await removeAll('ab-');
    await rm(work, { recursive: true, force: true });
    client.close();
  }
}

main().catch((e) => {
  process.stderr.write(`apply-bench: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
