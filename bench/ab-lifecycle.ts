/**
 * Two versions of svcd side by side, alternately, on one machine: is a difference in compare.sh's single-container
 * figures a change of the code, or of the machine between two runs?
 *   git worktree add /tmp/old <commit>; ln -s $PWD/node_modules /tmp/old/node_modules   (and build its .build/ helpers)
 *   node --import tsx bench/ab-lifecycle.ts --a /tmp/old/src/main.ts --b src/main.ts [--rounds 2] [--n 20]
 * Each round starts a daemon of each version in turn (its default engine, its state directory on a fresh ext4), imports the
 * busybox image, then times `--n` create, start, force stop and delete of one container, one after the other,
 * through the unix socket; then makes `--list` stopped containers (20 at a time) and times
 * `GET /1.0/containers?recursion=1` one after the other for 3 s. Prints each round's medians, then the median of
 * the rounds per version.
 * Run by hand (root), never as a test. Only the unix sockets are used.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { waitOp } from '../integration/support/container-env.ts';
import { startDaemon } from '../integration/support/daemon.ts';
import { client } from '../integration/support/http.ts';
import { importTestImage, type Host } from '../integration/support/two-hosts.ts';

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: 'src/main.ts' },
    rounds: { type: 'string', default: '2' },
    n: { type: 'string', default: '20' },
    list: { type: 'string', default: '200' },
  },
});
if (!values.a) {
  process.stderr.write(
    'usage: bench/ab-lifecycle.ts --a <other checkout>/src/main.ts [--b src/main.ts] [--rounds 2] [--n 20]\n',
  );
  process.exit(2);
}
const STEPS = ['create', 'start', 'stop (force)', 'delete', 'list (recursion=1)'] as const;
type Medians = Record<(typeof STEPS)[number], number>;
const run = promisify(execFile);

/**
 * A fresh ext4 on a sparse loop file for one daemon's state directory, as compare.sh gives each daemon: on a
 * filesystem that has seen mass deletes, file creation slows down for minutes, and would be billed to the next round.
 */
async function freshFs(): Promise<{ dir: string; drop(): Promise<void> }> {
  const base = await mkdtemp(path.join(os.tmpdir(), 'ab-'));
  const file = path.join(base, 'fs.img');
  const dir = path.join(base, 'mnt');
  await run('truncate', ['-s', '8G', file]);
  await run('mkfs.ext4', ['-q', '-F', file]);
  await mkdir(dir);
  await run('mount', ['-o', 'loop', file, dir]);
  // the private PostgreSQL server runs as postgres: it must reach the state directory
  await chmod(base, 0o755);
  await chmod(dir, 0o755);
  await run('sh', ['-c', 'sync; echo 3 > /proc/sys/vm/drop_caches']);
  return {
    dir: path.join(dir, 'state'),
    drop: async () => {
      await run('umount', ['-l', dir]).catch(() => undefined);
      await rm(base, { recursive: true, force: true });
    },
  };
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

async function round(main: string, n: number): Promise<Medians> {
  const fs = await freshFs();
  const daemon = await startDaemon({
    stateDir: fs.dir,
    env: { SVCD_LOG_LEVEL: 'warn' },
    command: [process.execPath, '--import', 'tsx', path.resolve(main)],
  });
  const api = client({ socketPath: daemon.socketPath });
  const img = await importTestImage({ daemon, api } as unknown as Host, { alias: 'bb' });
  const times: Record<string, number[]> = Object.fromEntries(STEPS.map((s) => [s, []]));
  const timed = async (step: (typeof STEPS)[number], call: () => Promise<unknown>) => {
    const t0 = performance.now();
    await call();
    times[step]!.push(performance.now() - t0);
  };
  try {
    for (let i = 0; i < n; i++) {
      const url = `/1.0/containers/ab${i}`;
      await timed('create', async () =>
        waitOp(api, await api.post('/1.0/containers', { name: `ab${i}`, source: { type: 'image', alias: 'bb' } })),
      );
      await timed('start', async () => waitOp(api, await api.put(`${url}/state`, { action: 'start' })));
      await timed('stop (force)', async () =>
        waitOp(api, await api.put(`${url}/state`, { action: 'stop', force: true })),
      );
      await timed('delete', async () => waitOp(api, await api.delete(url)));
    }
    const listed = Number(values.list);
    for (let i = 0; i < listed; i += 20)
      await Promise.all(
        Array.from({ length: Math.min(20, listed - i) }, async (_, j) =>
          waitOp(api, await api.post('/1.0/containers', { name: `l${i + j}`, source: { type: 'image', alias: 'bb' } })),
        ),
      );
    for (const end = performance.now() + 3000; performance.now() < end; )
      await timed('list (recursion=1)', () => api.get('/1.0/containers?recursion=1'));
  } finally {
    await daemon.destroy();
    await rm(img.dir, { recursive: true, force: true });
    await fs.drop();
  }
  return Object.fromEntries(STEPS.map((s) => [s, median(times[s]!)])) as Medians;
}

const all: Record<'a' | 'b', Medians[]> = { a: [], b: [] };
for (let r = 0; r < Number(values.rounds); r++)
  for (const v of ['a', 'b'] as const) {
    const m = await round(values[v]!, Number(values.n));
    all[v].push(m);
    console.log(`round ${r + 1} ${v}: ${STEPS.map((s) => `${s} ${m[s].toFixed(m[s] < 10 ? 2 : 1)} ms`).join(', ')}`);
  }
console.log("\n| step (median of the rounds' medians) | a | b | b ÷ a |\n|---|---|---|---|");
for (const s of STEPS) {
  const [a, b] = [median(all.a.map((m) => m[s])), median(all.b.map((m) => m[s]))];
  console.log(`| ${s} | ${a.toFixed(a < 10 ? 2 : 1)} ms | ${b.toFixed(b < 10 ? 2 : 1)} ms | ${(b / a).toFixed(2)}× |`);
}
