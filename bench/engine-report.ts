/**
 * The engines table of bench/compare.sh: svcd on each database engine (PGlite first, the reference; the
 * private server; a PostgreSQL server by DATABASE_URL) and lxd, figure by figure, with the
 * verdicts: every other engine within 1.25× of PGlite on each figure (the same run), and delete ≤ ½ of
 * lxd's on every engine. Pure: result files in, table rows out.
 */
import type { BenchResults } from './lib/results.ts';
import { fmtKiB, fmtMs, fmtRate } from './lib/stats.ts';

/** PostgreSQL may be this much slower than PGlite on any figure. */
export const ENGINE_SLACK = 1.25;

type Verdict = 'PASS' | 'MISS' | 'n/a';
/** figure, one column per engine, lxd, each other engine / the reference, verdict, what was compared. */
export type EngineRow = string[];
/** An engine's name (a column) and its results. */
export type EngineRun = [name: string, results: BenchResults | undefined];

interface Figure {
  label: string;
  /** Lower is better (a time) or higher (a rate). */
  better: 'lower' | 'higher';
  pick: (r: BenchResults) => number | undefined;
  fmt: (x: number | undefined) => string;
}

const finite = (x: number | undefined): x is number => x !== undefined && Number.isFinite(x) && x > 0;

/** The figures the targets name, at the largest count of the run. */
export function engineFigures(top: number): Figure[] {
  const listAt = (c: number) => (r: BenchResults) =>
    r.get.find((g) => g.what === 'list' && g.containers === top && g.concurrency === c && g.errors === 0)?.rps;
  return [
    { label: 'create (median)', better: 'lower', pick: (r) => r.single?.create.latency?.median, fmt: fmtMs },
    { label: 'start (median)', better: 'lower', pick: (r) => r.single?.start.latency?.median, fmt: fmtMs },
    { label: 'create+start (median)', better: 'lower', pick: (r) => r.single?.createStart.latency?.median, fmt: fmtMs },
    { label: 'stop (force) (median)', better: 'lower', pick: (r) => r.single?.stopForce.latency?.median, fmt: fmtMs },
    { label: 'delete (median)', better: 'lower', pick: (r) => r.single?.delete.latency?.median, fmt: fmtMs },
    ...(top > 0
      ? [
          {
            label: `${top} creates+starts at once (wall)`,
            better: 'lower' as const,
            pick: (r: BenchResults) => r.bulk.find((b) => b.n === top)?.createStartWallMs,
            fmt: fmtMs,
          },
          {
            label: `${top} stops+deletes at once (wall)`,
            better: 'lower' as const,
            pick: (r: BenchResults) => r.bulk.find((b) => b.n === top)?.deleteWallMs,
            fmt: fmtMs,
          },
        ]
      : []),
    { label: `list of ${top}, c=1 (req/s)`, better: 'higher', pick: listAt(1), fmt: fmtRate },
    { label: `list of ${top}, c=16 (req/s)`, better: 'higher', pick: listAt(16), fmt: fmtRate },
  ];
}

/**
 * One row per figure: each engine after the first (the reference, PGlite) within ENGINE_SLACK of it (the
 * verdict is the worst of them); then delete ≤ ½ lxd for each engine.
 */
export function engineRows(engines: readonly EngineRun[], lxd: BenchResults | undefined): EngineRow[] {
  const [ref, ...others] = engines;
  const present = engines.map(([, r]) => r).filter((r): r is BenchResults => r !== undefined);
  const top = Math.max(0, ...(present[0]?.options.counts ?? [0]));
  const rows: EngineRow[] = [];
  for (const f of engineFigures(top)) {
    const a = ref?.[1] ? f.pick(ref[1]) : undefined;
    const ratios: string[] = [];
    let verdict: Verdict = 'n/a';
    for (const [name, r] of others) {
      const b = r ? f.pick(r) : undefined;
      if (!finite(a) || !finite(b)) continue;
      const ok = f.better === 'lower' ? b <= a * ENGINE_SLACK : b >= a / ENGINE_SLACK;
      ratios.push(`${name} ${(b / a).toFixed(2)}×`);
      verdict = !ok ? 'MISS' : verdict === 'n/a' ? 'PASS' : verdict;
    }
    const target = others.length
      ? `${others.map(([n]) => n).join(', ')} ${f.better === 'lower' ? `≤ ${ENGINE_SLACK}×` : `≥ 1/${ENGINE_SLACK} of`} ${ref![0]}`
      : '';
    rows.push([
      f.label,
      ...engines.map(([, r]) => f.fmt(r ? f.pick(r) : undefined)),
      lxd ? f.fmt(f.pick(lxd)) : '—',
      ratios.join(', '),
      verdict,
      target,
    ]);
  }
  // The machine is shared: each run's load says how much its figures mean.
  const load = (r: BenchResults | undefined) =>
    r ? (r.load ?? []).map((l) => l.loadavg[0].toFixed(1)).join(' / ') || '—' : '—';
  rows.push([
    'machine load (1-min, per phase)',
    ...engines.map(([, r]) => load(r)),
    lxd ? load(lxd) : '—',
    '',
    'n/a',
    'informative',
  ]);
  // The whole tree's memory on each engine: idle ≤ 2× lxd's, and after deleting the containers ≤ idle + 10%.
  for (const kind of ['RSS', 'PSS'] as const) {
    const idle = (r: BenchResults | undefined) => (kind === 'RSS' ? r?.rss.idleKiB : r?.rss.idlePssKiB);
    const churned = (r: BenchResults | undefined) => {
      const last = r?.bulk.at(-1);
      return kind === 'RSS' ? last?.rssAfterDeleteSettledKiB : last?.pssAfterDeleteSettledKiB;
    };
    const l = idle(lxd);
    engines.forEach(([name, r], i) => {
      const d = idle(r);
      if (!r || !finite(d)) return;
      const ok = finite(l) ? d <= 2 * l : undefined;
      rows.push([
        `tree ${kind} idle on ${name} ≤ 2× lxd`,
        ...engines.map((_, j) => (j === i ? fmtKiB(d) : '')),
        lxd ? fmtKiB(l) : '—',
        finite(l) ? `${(d / l).toFixed(2)}× lxd` : '',
        ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS',
        'whole tree, 0 containers',
      ]);
      const c = churned(r);
      if (!finite(c)) return;
      rows.push([
        `tree ${kind} after churn on ${name} ≤ idle + 10%`,
        ...engines.map((_, j) => (j === i ? fmtKiB(c) : '')),
        '',
        `${(((c - d) / d) * 100).toFixed(1)}%`,
        c <= d * 1.1 ? 'PASS' : 'MISS',
        'after deleting them (settled)',
      ]);
    });
  }
  const del = (r: BenchResults | undefined) =>
    r && !r.single?.delete.failed ? r.single?.delete.latency?.median : undefined;
  const lxdDelete = del(lxd);
  engines.forEach(([name, r], i) => {
    if (!r) return;
    const d = del(r);
    const ok = finite(d) && finite(lxdDelete) ? d <= lxdDelete / 2 : undefined;
    rows.push([
      `delete on ${name} ≤ ½ lxd`,
      ...engines.map((_, j) => (j === i ? fmtMs(d) : '')),
      lxd ? fmtMs(lxdDelete) : '—',
      finite(d) && finite(lxdDelete) ? `${(d / lxdDelete).toFixed(2)}× lxd` : '',
      ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS',
      'svcd ≤ ½ lxd (median)',
    ]);
  });
  return rows;
}
