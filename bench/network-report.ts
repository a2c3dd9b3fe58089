/**
 * bench/network-bench.ts results of svcd and LXD side by side, with the targets they are judged by:
 *   node --import tsx bench/network-report.ts <svcd-net.json> [<lxd-net.json>]
 */
import { readFile } from 'node:fs/promises';
import type { NetworkBenchResults } from './network-bench.ts';
import { fmtMs, table } from './lib/stats.ts';

const [svcdFile, lxdFile] = process.argv.slice(2);
const load = async (f: string | undefined) =>
  f ? (JSON.parse(await readFile(f, 'utf8').catch(() => 'null')) as NetworkBenchResults | null) : null;
const s = (await load(svcdFile))!;
const l = await load(lxdFile);
const ratio = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
const verdict = (r: number | undefined, max: number, shown = String(max)) =>
  r === undefined ? 'n/a' : `${r.toFixed(2)}× ${r <= max ? 'met' : 'MISSED'} (≤ ${shown})`;
const repair = (r?: NetworkBenchResults | null) =>
  r === null || r === undefined ? '-' : r.repairMs === null ? 'never (30 s)' : fmtMs(r.repairMs);
const rows = [
  ['', 'svcd', 'lxd', 'target'],
  [
    'create+start, nic on a bridge (median)',
    fmtMs(s.single.createStart?.median),
    fmtMs(l?.single.createStart?.median),
    verdict(ratio(s.single.createStart?.median, l?.single.createStart?.median), 0.5, '½'),
  ],
  [
    `${s.bulk?.n ?? '-'} launched at once (wall)`,
    fmtMs(s.bulk?.wallMs),
    fmtMs(l?.bulk?.wallMs),
    verdict(ratio(s.bulk?.wallMs, l?.bulk?.wallMs), 1 / 3, '⅓'),
  ],
  [
    '  failures',
    String(s.bulk?.failed ?? '-'),
    String(l?.bulk?.failed ?? '-'),
    s.bulk?.failed === 0 ? 'met (0)' : 'MISSED (0)',
  ],
  [
    '  leased within 5 s of start',
    `${s.bulk?.within5s ?? '-'}/${s.bulk?.n ?? '-'}`,
    `${l?.bulk?.within5s ?? '-'}/${l?.bulk?.n ?? '-'}`,
    s.bulk && s.bulk.within5s === s.bulk.n ? 'met (all)' : 'MISSED (all)',
  ],
  [
    'GET leases (median)',
    fmtMs(s.leasesGet?.median),
    fmtMs(l?.leasesGet?.median),
    s.leasesGet && s.leasesGet.median <= 5 ? 'met (≤ 5 ms)' : 'MISSED (≤ 5 ms)',
  ],
  [
    'GET state (median)',
    fmtMs(s.stateGet?.median),
    fmtMs(l?.stateGet?.median),
    s.stateGet && s.stateGet.median <= 5 ? 'met (≤ 5 ms)' : 'MISSED (≤ 5 ms)',
  ],
  [
    'deleted bridge repaired after',
    repair(s),
    repair(l),
    s.repairMs !== null && s.repairMs !== undefined && s.repairMs <= 2000 ? 'met (≤ 2 s)' : 'MISSED (≤ 2 s)',
  ],
];
console.log(table(rows));
for (const [who, r] of [
  ['svcd', s],
  ['lxd', l],
] as const)
  if (r?.errors.length) console.log(`${who} errors: ${r.errors.slice(0, 5).join('; ')}`);
