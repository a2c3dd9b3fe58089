/**
 * Side-by-side table of two api-bench result files (svcd and, when it ran, LXD) and the
 * target verdicts. Prints PASS/MISS; never fails on a MISS (it is a benchmark, not a test).
 *
 *   node --import tsx bench/compare-report.ts <svcd.json> [<lxd.json>] [--lxd-note "why LXD did not run"]
 *        [--engine <name>=<svcd on that engine.json> ...]
 *
 * With --engine (repeated: the first is the reference, PGlite), an engines table (bench/engine-report.ts) follows.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { BenchResults, BulkResults, GetCell, StepStats } from './lib/results.ts';
import { fmtKiB, fmtMs, fmtRate, table } from './lib/stats.ts';
import { engineRows } from './engine-report.ts';

const { values, positionals } = parseArgs({
  options: { 'lxd-note': { type: 'string' }, engine: { type: 'string', multiple: true } },
  allowPositionals: true,
});
const [svcdFile, lxdFile] = positionals;
if (!svcdFile) {
  process.stderr.write('usage: node --import tsx bench/compare-report.ts <svcd.json> [<lxd.json>] [--lxd-note TEXT]\n');
  process.exit(2);
}
const load = async (f: string): Promise<BenchResults | undefined> => {
  try {
    return JSON.parse(await readFile(f, 'utf8')) as BenchResults;
  } catch {
    return undefined;
  }
};
const svcd = await load(svcdFile);
const lxd = lxdFile ? await load(lxdFile) : undefined;
if (!svcd) {
  process.stderr.write(`compare-report: no results in ${svcdFile}\n`);
  process.exit(1);
}
const log = (s = '') => process.stdout.write(`${s}\n`);

const ratio = (a: number | undefined, b: number | undefined) =>
  a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > 0
    ? `${(a / b).toFixed(2)}×`
    : '';

type Row = [string, string, string, string];
const rows: Row[] = [['figure', svcd.label || 'svcd', lxd ? lxd.label || 'lxd' : 'lxd', 'svcd / lxd']];
const section = (title: string) => rows.push([`[${title}]`, '', '', '']);
const add = (label: string, a: number | undefined, b: number | undefined, fmt: (x: number | undefined) => string) =>
  rows.push([label, fmt(a), lxd ? fmt(b) : '—', lxd ? ratio(a, b) : '']);

rows.push([
  'server',
  `${svcd.server.name} ${svcd.server.version}`,
  lxd ? `${lxd.server.name} ${lxd.server.version}` : '—',
  '',
]);

const cell = (r: BenchResults | undefined, what: GetCell['what'], n: number, c: number) =>
  r?.get.find((g) => g.what === what && g.containers === n && g.concurrency === c);
const counts = svcd.options.counts;
for (const what of ['server', 'list'] as const) {
  section(what === 'server' ? 'GET /1.0 (req/s; p95)' : 'GET /1.0/containers?recursion=1 (req/s; p95)');
  for (const n of counts)
    for (const c of svcd.options.concurrency) {
      const a = cell(svcd, what, n, c);
      const b = cell(lxd, what, n, c);
      if (!a && !b) continue;
      add(`${n} containers, c=${c}  req/s`, a?.rps, b?.rps, fmtRate);
      add(`${n} containers, c=${c}  p95`, a?.latency.p95, b?.latency.p95, fmtMs);
      if ((a?.errors ?? 0) || (b?.errors ?? 0))
        rows.push([`${n} containers, c=${c}  errors`, String(a?.errors ?? '—'), String(b?.errors ?? '—'), '']);
    }
}

section('single container (median / p95)');
const stepRows = (
  label: string,
  pick: (r: BenchResults) => StepStats | undefined,
  note?: (r: BenchResults) => string | undefined,
) => {
  const a = pick(svcd);
  const b = lxd ? pick(lxd) : undefined;
  const na = note?.(svcd);
  const nb = lxd ? note?.(lxd) : undefined;
  if (na || nb) {
    rows.push([
      label,
      na ?? `${fmtMs(a?.latency?.median)} / ${fmtMs(a?.latency?.p95)}`,
      lxd ? (nb ?? `${fmtMs(b?.latency?.median)} / ${fmtMs(b?.latency?.p95)}`) : '—',
      '',
    ]);
    return;
  }
  rows.push([
    `${label}`,
    `${fmtMs(a?.latency?.median)} / ${fmtMs(a?.latency?.p95)}`,
    lxd ? `${fmtMs(b?.latency?.median)} / ${fmtMs(b?.latency?.p95)}` : '—',
    lxd ? ratio(a?.latency?.median, b?.latency?.median) : '',
  ]);
  if ((a?.failed ?? 0) || (b?.failed ?? 0))
    rows.push([`${label} failed`, String(a?.failed ?? '—'), String(b?.failed ?? '—'), '']);
};
stepRows('create', (r) => r.single?.create);
stepRows('start', (r) => r.single?.start);
stepRows('create+start', (r) => r.single?.createStart);
const execNote = (r: BenchResults) =>
  r.single && !r.single.exec.supported
    ? r.single.exec.note?.startsWith('skipped')
      ? 'skipped'
      : 'not supported'
    : undefined;
stepRows('exec true', (r) => r.single?.exec, execNote);
stepRows(
  'exec true (websockets)',
  (r) => r.single?.execWebsocket,
  (r) => execNote(r) ?? (r.single && !r.single.execWebsocket ? 'not measured' : undefined),
);
stepRows('stop (force)', (r) => r.single?.stopForce);
stepRows('delete', (r) => r.single?.delete);

if (svcd.execRunning || lxd?.execRunning) {
  section(
    `exec on a running container (${svcd.execRunning?.rounds ?? lxd?.execRunning?.rounds} rounds each; median / p95)`,
  );
  const missing = (r: BenchResults) => (r.execRunning ? undefined : 'not measured');
  stepRows('exec true', (r) => r.execRunning?.exec, missing);
  stepRows('exec true (websockets)', (r) => r.execRunning?.execWebsocket, missing);
}
const TRANSFERS = ['push 1 KiB', 'pull 1 KiB', 'push 64 MiB', 'pull 64 MiB'];
if (svcd.files || lxd?.files) {
  section('files (MB/s, median transfer)');
  for (const t of TRANSFERS)
    add(t, svcd.files?.[t]?.mbPerS, lxd?.files?.[t]?.mbPerS, (x) => (x === undefined ? '—' : x.toFixed(1)));
}

const bulk = (r: BenchResults | undefined, n: number) => r?.bulk.find((b) => b.n === n);
for (const n of counts.filter((x) => x > 0)) {
  section(`${n} containers at once`);
  const a = bulk(svcd, n);
  const b = bulk(lxd, n);
  add('create+start wall', a?.createStartWallMs, b?.createStartWallMs, fmtMs);
  rows.push([
    '  failed (create/start)',
    a ? `${a.createFailed}/${a.startFailed}` : '—',
    b ? `${b.createFailed}/${b.startFailed}` : '—',
    '',
  ]);
  rows.push(['  running afterwards', a ? `${a.runningObserved}/${n}` : '—', b ? `${b.runningObserved}/${n}` : '—', '']);
  add('  per-container create p95', a?.createLatency?.p95, b?.createLatency?.p95, fmtMs);
  add('  per-container start p95', a?.startLatency?.p95, b?.startLatency?.p95, fmtMs);
  add('stop(force)+delete wall', a?.deleteWallMs, b?.deleteWallMs, fmtMs);
  rows.push([
    '  failed (stop/delete)',
    a ? `${a.stopFailed}/${a.deleteFailed}` : '—',
    b ? `${b.stopFailed}/${b.deleteFailed}` : '—',
    '',
  ]);
  add(`tree RSS at ${n} running`, a?.rssRunningKiB, b?.rssRunningKiB, fmtKiB);
  add(`tree PSS at ${n} running`, a?.pssRunningKiB, b?.pssRunningKiB, fmtKiB);
  add(
    `tree RSS after deleting (+${svcd.options.settleS} s)`,
    a?.rssAfterDeleteSettledKiB,
    b?.rssAfterDeleteSettledKiB,
    fmtKiB,
  );
  add(
    `tree PSS after deleting (+${svcd.options.settleS} s)`,
    a?.pssAfterDeleteSettledKiB,
    b?.pssAfterDeleteSettledKiB,
    fmtKiB,
  );
}
section('daemon process tree (daemon + what it owns, not containers)');
add('RSS at start', svcd.rss.startKiB, lxd?.rss.startKiB, fmtKiB);
add('PSS at start', svcd.rss.startPssKiB, lxd?.rss.startPssKiB, fmtKiB);
add('RSS idle (0 containers)', svcd.rss.idleKiB, lxd?.rss.idleKiB, fmtKiB);
add('PSS idle (0 containers)', svcd.rss.idlePssKiB, lxd?.rss.idlePssKiB, fmtKiB);

section('machine load (1-min load average when each phase began)');
for (const l of svcd.load ?? []) {
  const o = lxd?.load?.find((x) => x.phase === l.phase);
  rows.push([l.phase, l.loadavg[0].toFixed(2), o ? o.loadavg[0].toFixed(2) : '—', '']);
}

log('== side by side (same machine, same run; one daemon running at a time)');
log(table(rows));
if (!lxd)
  log(`\nlxd: did not run${values['lxd-note'] ? ` — ${values['lxd-note']}` : ''}; only svcd's figures are shown.`);
for (const r of [svcd, lxd]) {
  if (r?.aborted) log(`${r.label}: run stopped early: ${r.aborted}`);
  if (r?.leftovers.length) log(`${r.label}: LEFTOVER containers: ${r.leftovers.join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// targets

const top = Math.max(...counts);
const topNote = top === 200 ? '' : ` (largest count run: ${top}, the target names 200)`;
type Verdict = 'PASS' | 'MISS' | 'n/a';
const verdicts: [string, Verdict, string][] = [];
const judge = (name: string, ok: boolean | undefined, detail: string) =>
  verdicts.push([name, ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS', detail]);
const noLxd = 'lxd did not run';

for (const c of svcd.options.concurrency) {
  const a = cell(svcd, 'list', top, c);
  const b = cell(lxd, 'list', top, c);
  judge(
    `list with ${top} containers ≥ 10× lxd req/s (c=${c})${topNote}`,
    a && b ? a.errors === 0 && a.rps >= 10 * b.rps : undefined,
    a && b
      ? `${fmtRate(a.rps)} vs ${fmtRate(b.rps)} req/s = ${ratio(a.rps, b.rps)}`
      : !lxd
        ? `${noLxd}; svcd ${fmtRate(a?.rps)} req/s`
        : 'missing figures',
  );
}
{
  const a = svcd.single?.createStart.latency?.median;
  const b = lxd?.single?.createStart.latency?.median;
  judge(
    'create+start ≤ ½ of lxd (median)',
    a !== undefined && b !== undefined ? a <= b / 2 && (svcd.single?.createStart.failed ?? 0) === 0 : undefined,
    a !== undefined && b !== undefined
      ? `${fmtMs(a)} vs ${fmtMs(b)} = ${ratio(a, b)}`
      : lxd
        ? 'missing figures'
        : `${noLxd}; svcd ${fmtMs(a)}`,
  );
}
{
  const a = svcd.single?.stopForce.latency?.median;
  const b = lxd?.single?.stopForce.latency?.median;
  judge(
    'force stop ≤ ⅕ of lxd (median)',
    a !== undefined && b !== undefined ? a <= b / 5 && (svcd.single?.stopForce.failed ?? 0) === 0 : undefined,
    a !== undefined && b !== undefined
      ? `${fmtMs(a)} vs ${fmtMs(b)} = ${ratio(a, b)}`
      : lxd
        ? 'missing figures'
        : `${noLxd}; svcd ${fmtMs(a)}`,
  );
}
{
  const a: BulkResults | undefined = bulk(svcd, top);
  const b = bulk(lxd, top);
  const failed = a ? a.createFailed + a.startFailed : undefined;
  judge(
    `${top} concurrent creates+starts ≤ ⅓ of lxd wall, 0 failed${topNote}`,
    a && b ? a.createStartWallMs <= b.createStartWallMs / 3 && failed === 0 : a && failed !== 0 ? false : undefined,
    a && b
      ? `${fmtMs(a.createStartWallMs)} vs ${fmtMs(b.createStartWallMs)} = ${ratio(a.createStartWallMs, b.createStartWallMs)}; svcd failed ${failed}, lxd failed ${b.createFailed + b.startFailed}`
      : `${lxd ? 'missing figures' : noLxd}; svcd ${fmtMs(a?.createStartWallMs)}, failed ${failed ?? '—'}`,
  );
}
for (const [what, idle, other] of [
  ['RSS', svcd.rss.idleKiB, lxd?.rss.idleKiB],
  ['PSS', svcd.rss.idlePssKiB, lxd?.rss.idlePssKiB],
] as const)
  judge(
    `svcd tree ${what} idle ≤ 2× lxd's tree`,
    idle && other ? idle <= 2 * other : undefined,
    idle && other
      ? `${fmtKiB(idle)} vs ${fmtKiB(other)} = ${ratio(idle, other)}`
      : lxd
        ? 'missing figures'
        : `${noLxd}; svcd ${fmtKiB(idle)}`,
  );
for (const [what, idle, after] of [
  ['RSS', svcd.rss.idleKiB, bulk(svcd, top)?.rssAfterDeleteSettledKiB],
  ['PSS', svcd.rss.idlePssKiB, bulk(svcd, top)?.pssAfterDeleteSettledKiB],
] as const)
  judge(
    `svcd tree ${what} after deleting the ${top} ≤ idle + 10%`,
    idle && after ? after <= idle * 1.1 : undefined,
    idle && after
      ? `${fmtKiB(after)} vs idle ${fmtKiB(idle)} (${((after / idle - 1) * 100).toFixed(1)}%)`
      : 'no memory figures (no --pid?)',
  );
for (const [label, pick] of [
  ['exec true', (r: BenchResults | undefined) => r?.execRunning?.exec],
  ['exec true (websockets)', (r: BenchResults | undefined) => r?.execRunning?.execWebsocket],
] as const) {
  const a = pick(svcd);
  const b = pick(lxd);
  const am = a?.latency?.median;
  const bm = b?.latency?.median;
  judge(
    `${label} on a running container ≤ lxd's round trip (median)`,
    am !== undefined && bm !== undefined ? am <= bm && a!.failed === 0 : undefined,
    am !== undefined && bm !== undefined
      ? `${fmtMs(am)} vs ${fmtMs(bm)} = ${ratio(am, bm)}`
      : lxd
        ? 'missing figures'
        : `${noLxd}; svcd ${fmtMs(am)}`,
  );
}
for (const t of TRANSFERS) {
  const a = svcd.files?.[t];
  const b = lxd?.files?.[t];
  judge(
    `files ${t} throughput ≥ lxd's (median)`,
    a?.mbPerS !== undefined && b?.mbPerS !== undefined ? a.mbPerS >= b.mbPerS && a.failed === 0 : undefined,
    a?.mbPerS !== undefined && b?.mbPerS !== undefined
      ? `${a.mbPerS.toFixed(1)} vs ${b.mbPerS.toFixed(1)} MB/s = ${ratio(a.mbPerS, b.mbPerS)}`
      : lxd
        ? 'missing figures'
        : `${noLxd}; svcd ${a?.mbPerS?.toFixed(1) ?? '—'} MB/s`,
  );
}
log('\n== targets');
log(table([['target', 'verdict', 'figures'], ...verdicts.map(([n, v, d]) => [n, v, d])], [0, 2]));

if (values.engine?.length) {
  const engines: [string, BenchResults | undefined][] = [];
  for (const spec of values.engine) {
    const [name, file] = [spec.slice(0, spec.indexOf('=')), spec.slice(spec.indexOf('=') + 1)];
    const r = await load(file);
    if (!r) log(`${name}: no results in ${file}`);
    if (r?.aborted) log(`${r.label}: run stopped early: ${r.aborted}`);
    if (r?.leftovers.length) log(`${r.label}: LEFTOVER containers: ${r.leftovers.join(', ')}`);
    engines.push([name, r]);
  }
  log(`\n== engines (svcd on ${engines.map(([n]) => n).join(', ')}, same run)`);
  log(
    table(
      [
        ['figure', ...engines.map(([n]) => n), 'lxd', `÷ ${engines[0]![0]}`, 'verdict', 'target'],
        ...engineRows(engines, lxd),
      ],
      [0, engines.length + 4],
    ),
  );
}
