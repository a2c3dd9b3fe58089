/**
 * bench/proxy-bench.ts results of svcd and LXD side by side, with the targets they are judged by:
 *   node --import tsx bench/proxy-report.ts <svcd-proxy.json> [<lxd-proxy.json>]
 */
import { readFile } from 'node:fs/promises';
import type { ProxyBenchResults } from './proxy-bench.ts';
import { fmtMs, table } from './lib/stats.ts';

const [svcdFile, lxdFile] = process.argv.slice(2);
const load = async (f: string | undefined) =>
  f ? (JSON.parse(await readFile(f, 'utf8').catch(() => 'null')) as ProxyBenchResults | null) : null;
const s = (await load(svcdFile))!;
const l = await load(lxdFile);
const ratio = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
const atMost = (r: number | undefined, max: number, shown: string) =>
  r === undefined ? 'n/a' : `${r.toFixed(2)}× ${r <= max ? 'met' : 'MISSED'} (≤ ${shown})`;
const atLeast = (r: number | undefined, min: number, shown: string) =>
  r === undefined ? 'n/a' : `${r.toFixed(2)}× ${r >= min ? 'met' : 'MISSED'} (≥ ${shown})`;
const mibs = (r?: ProxyBenchResults | null) => (r?.throughput ? `${r.throughput.mibPerS.toFixed(0)} MiB/s` : '—');
const rows = [
  ['', 'svcd', 'lxd', 'target'],
  [
    'add a proxy to a running container (median)',
    fmtMs(s.add?.median),
    fmtMs(l?.add?.median),
    atMost(ratio(s.add?.median, l?.add?.median), 0.5, '½ lxd'),
  ],
  ['  … until it answers (median)', fmtMs(s.addUntilAnswer?.median), fmtMs(l?.addUntilAnswer?.median), ''],
  [
    'GET over a new connection through it (median)',
    fmtMs(s.request?.median),
    fmtMs(l?.request?.median),
    atMost(ratio(s.request?.median, l?.request?.median), 1, 'lxd'),
  ],
  [
    `${s.concurrent?.n ?? '-'} connections at once: failed`,
    String(s.concurrent?.failed ?? '-'),
    String(l?.concurrent?.failed ?? '-'),
    s.concurrent?.failed === 0 ? 'met (0)' : 'MISSED (0)',
  ],
  [
    `${s.throughput?.mib ?? '-'} MiB host → container`,
    mibs(s),
    mibs(l),
    atLeast(ratio(s.throughput?.mibPerS, l?.throughput?.mibPerS), 1, 'lxd'),
  ],
];
console.log(table(rows));
for (const [who, r] of [
  ['svcd', s],
  ['lxd', l],
] as const)
  if (r?.errors.length) console.log(`${who} errors: ${r.errors.slice(0, 5).join('; ')}`);
