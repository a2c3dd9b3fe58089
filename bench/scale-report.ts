/**
 * The scale bench side by side: svcd's results (and lxd's when its file exists), per pool, with the
 * target for idle CPU (≤ 2% of one core with N running).
 *   node --import tsx bench/scale-report.ts <svcd-scale.json> [<lxd-scale.json>]
 */
import { readFile } from 'node:fs/promises';
import type { PoolResults } from './lib/scale-steps.ts';
import { fmtKiB, fmtMs, table } from './lib/stats.ts';

interface ScaleFile {
  label: string;
  n: number;
  idleRssKiB: number;
  idleCpu0?: { percent: number };
  cpuWindowS: number;
  pools: PoolResults[];
}
const load = async (f: string | undefined) =>
  f ? ((await readFile(f, 'utf8').then(JSON.parse, () => undefined)) as ScaleFile | undefined) : undefined;
const [svcd, lxd] = await Promise.all([load(process.argv[2]), load(process.argv[3])]);
if (!svcd) {
  process.stderr.write('usage: node --import tsx bench/scale-report.ts <svcd-scale.json> [<lxd-scale.json>]\n');
  process.exit(2);
}
const cell = (p: PoolResults | undefined, f: (p: PoolResults) => string) => (p ? f(p) : '–');
const p95 = (p: PoolResults, path: string, c: number) =>
  fmtMs(p.list.find((l) => l.path === path && l.concurrency === c)?.latency.p95);
const rows: string[][] = [['', 'svcd', 'lxd', 'verdict']];
const pct = (f: ScaleFile | undefined) => (f?.idleCpu0 ? `${f.idleCpu0.percent.toFixed(2)}%` : '–');
rows.push(['idle CPU, no container', pct(svcd), pct(lxd), '']);
for (const s of svcd.pools) {
  const l = lxd?.pools.find((x) => x.pool === s.pool);
  rows.push([`— pool ${s.pool}, N=${s.n} —`, '', '', '']);
  rows.push([
    'launch wall',
    cell(s, (p) => `${(p.launchWallMs / 1000).toFixed(1)} s`),
    cell(l, (p) => `${(p.launchWallMs / 1000).toFixed(1)} s`),
    '',
  ]);
  rows.push([
    'failures (create/start/delete)',
    cell(s, (p) => `${p.createFailed}/${p.startFailed}/${p.deleteFailed}`),
    cell(l, (p) => `${p.createFailed}/${p.startFailed}/${p.deleteFailed}`),
    s.createFailed + s.startFailed + s.deleteFailed === 0 ? 'ok' : 'FAIL',
  ]);
  for (const path of ['/1.0/containers', '/1.0/containers?recursion=1'])
    for (const c of [1, 16])
      rows.push([
        `list p95 ${path.includes('recursion') ? 'recursion=1' : 'recursion=0'} c=${c}`,
        p95(s, path, c),
        cell(l, (p) => p95(p, path, c)),
        '',
      ]);
  rows.push([
    `idle CPU (${svcd.cpuWindowS} s window)`,
    `${s.idleCpu.percent.toFixed(2)}%`,
    cell(l, (p) => `${p.idleCpu.percent.toFixed(2)}%`),
    s.idleCpu.percent <= 2 ? 'ok (≤ 2%)' : 'MISS (≤ 2%)',
  ]);
  rows.push([
    'one resync pass',
    s.resync ? ('error' in s.resync ? s.resync.error : `${fmtMs(s.resync.tookMs)} (${s.resync.keys} keys)`) : '–',
    'n/a',
    '',
  ]);
  rows.push(['tree RSS with N running', fmtKiB(s.rssRunningKiB), cell(l, (p) => fmtKiB(p.rssRunningKiB)), '']);
  rows.push(['RSS per container', fmtKiB(s.rssPerContainerKiB), cell(l, (p) => fmtKiB(p.rssPerContainerKiB)), '']);
  rows.push([
    'delete all wall',
    cell(s, (p) => `${(p.deleteWallMs / 1000).toFixed(1)} s`),
    cell(l, (p) => `${(p.deleteWallMs / 1000).toFixed(1)} s`),
    '',
  ]);
}
process.stdout.write(
  `scale bench (idle tree RSS: svcd ${fmtKiB(svcd.idleRssKiB)}${lxd ? `, lxd ${fmtKiB(lxd.idleRssKiB)}` : ''})\n${table(rows)}\n`,
);
