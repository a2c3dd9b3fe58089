/**
 * The engines table of bench/compare.sh: svcd on PGlite, svcd on PostgreSQL and lxd, figure by figure,
 * with the verdicts: PostgreSQL within 1.25× of PGlite on each figure (the same run), and delete
 * ≤ ½ of lxd's on both engines. Pure: result files in, table rows out.
 */
import type { BenchResults } from './lib/results.ts';
import { fmtMs, fmtRate } from './lib/stats.ts';

/** PostgreSQL may be this much slower than PGlite on any figure. */
export const ENGINE_SLACK = 1.25;

type Verdict = 'PASS' | 'MISS' | 'n/a';
/** figure, PGlite, PostgreSQL, lxd, PostgreSQL / PGlite, verdict, what was compared. */
export type EngineRow = [string, string, string, string, string, Verdict, string];

interface Figure {
  label: string;
  /** Lower is better (a time) or higher (a rate). */
  better: 'lower' | 'higher';
  pick: (r: BenchResults) => number | undefined;
  fmt: (x: number | undefined) => string;
}

const finite = (x: number | undefined): x is number => x !== undefined && Number.isFinite(x) && x > 0;

/** The figures the issue names, at the largest count of the run. */
export function engineFigures(top: number): Figure[] {
  const listAt = (c: number) => (r: BenchResults) => r.get.find((g) => g.what === 'list' && g.containers === top && g.concurrency === c && g.errors === 0)?.rps;
  return [
    { label: 'create (median)', better: 'lower', pick: (r) => r.single?.create.latency?.median, fmt: fmtMs },
    { label: 'start (median)', better: 'lower', pick: (r) => r.single?.start.latency?.median, fmt: fmtMs },
    { label: 'create+start (median)', better: 'lower', pick: (r) => r.single?.createStart.latency?.median, fmt: fmtMs },
    { label: 'stop (force) (median)', better: 'lower', pick: (r) => r.single?.stopForce.latency?.median, fmt: fmtMs },
    { label: 'delete (median)', better: 'lower', pick: (r) => r.single?.delete.latency?.median, fmt: fmtMs },
    ...(top > 0
      ? [
          { label: `${top} creates+starts at once (wall)`, better: 'lower' as const, pick: (r: BenchResults) => r.bulk.find((b) => b.n === top)?.createStartWallMs, fmt: fmtMs },
          { label: `${top} stops+deletes at once (wall)`, better: 'lower' as const, pick: (r: BenchResults) => r.bulk.find((b) => b.n === top)?.deleteWallMs, fmt: fmtMs },
        ]
      : []),
    { label: `list of ${top}, c=1 (req/s)`, better: 'higher', pick: listAt(1), fmt: fmtRate },
    { label: `list of ${top}, c=16 (req/s)`, better: 'higher', pick: listAt(16), fmt: fmtRate },
  ];
}

/** One row per figure (PostgreSQL within ENGINE_SLACK of PGlite), then delete ≤ ½ lxd for each engine. */
export function engineRows(pglite: BenchResults | undefined, postgres: BenchResults | undefined, lxd: BenchResults | undefined): EngineRow[] {
  const top = Math.max(0, ...(pglite ?? postgres)?.options.counts ?? [0]);
  const rows: EngineRow[] = [];
  for (const f of engineFigures(top)) {
    const a = pglite ? f.pick(pglite) : undefined;
    const b = postgres ? f.pick(postgres) : undefined;
    const l = lxd ? f.pick(lxd) : undefined;
    const both = finite(a) && finite(b);
    const ok = both ? (f.better === 'lower' ? b <= a * ENGINE_SLACK : b >= a / ENGINE_SLACK) : undefined;
    rows.push([
      f.label,
      f.fmt(a),
      f.fmt(b),
      lxd ? f.fmt(l) : '—',
      both ? `${(b / a).toFixed(2)}×` : '',
      ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS',
      f.better === 'lower' ? `PostgreSQL ≤ ${ENGINE_SLACK}× PGlite` : `PostgreSQL ≥ PGlite / ${ENGINE_SLACK}`,
    ]);
  }
  // The machine is shared: each run's load says how much its figures mean.
  const load = (r: BenchResults | undefined) => (r ? (r.load ?? []).map((l) => l.loadavg[0].toFixed(1)).join(' / ') || '—' : '—');
  rows.push(['machine load (1-min, per phase)', load(pglite), load(postgres), lxd ? load(lxd) : '—', '', 'n/a', 'informative']);
  const del = (r: BenchResults | undefined) => (r && !r.single?.delete.failed ? r.single?.delete.latency?.median : undefined);
  const lxdDelete = del(lxd);
  for (const [name, r] of [['PGlite', pglite], ['PostgreSQL', postgres]] as const) {
    if (!r) continue;
    const d = del(r);
    const ok = finite(d) && finite(lxdDelete) ? d <= lxdDelete / 2 : undefined;
    rows.push([
      `delete on ${name} ≤ ½ lxd`,
      name === 'PGlite' ? fmtMs(d) : '',
      name === 'PostgreSQL' ? fmtMs(d) : '',
      lxd ? fmtMs(lxdDelete) : '—',
      finite(d) && finite(lxdDelete) ? `${(d / lxdDelete).toFixed(2)}× lxd` : '',
      ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS',
      'svcd ≤ ½ lxd (median)',
    ]);
  }
  return rows;
}
