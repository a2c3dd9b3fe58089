/**
 * bench/remote-image-bench.ts results of svcd and LXD side by side, with the targets they are judged by:
 *   node --import tsx bench/remote-image-report.ts <svcd-remote.json> [<lxd-remote.json>]
 */
import { readFile } from 'node:fs/promises';
import type { RemoteImageBenchResults } from './remote-image-bench.ts';
import { fmtMs, table } from './lib/stats.ts';

const [svcdFile, lxdFile] = process.argv.slice(2);
const load = async (f: string | undefined) =>
  f ? (JSON.parse(await readFile(f, 'utf8').catch(() => 'null')) as RemoteImageBenchResults | null) : null;
const s = await load(svcdFile);
const l = await load(lxdFile);
const ratio = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
const verdict = (r: number | undefined, ok: (r: number) => boolean, shown: string) =>
  r === undefined ? 'n/a' : `${r.toFixed(2)}× ${ok(r) ? 'met' : 'MISSED'} (${shown})`;
const ok = (r?: RemoteImageBenchResults | null, k?: 'uncached' | 'cached' | 'local') =>
  r && k ? `${r[k].ok}/${r[k].ok + r[k].failed}` : '—';
const sent = (r?: RemoteImageBenchResults | null) =>
  r?.concurrent ? Object.values(r.concurrent.downloads).join('/') : '—';
const oneDownload = (r?: RemoteImageBenchResults | null) =>
  r?.concurrent ? Object.values(r.concurrent.downloads).every((n) => n === 1) : false;
const rows = [
  ['', 'svcd', 'lxd', 'target'],
  [
    'launch, remote image not cached (median)',
    fmtMs(s?.uncached.launch?.median),
    fmtMs(l?.uncached.launch?.median),
    verdict(ratio(s?.uncached.launch?.median, l?.uncached.launch?.median), (r) => r <= 1, '≤ lxd'),
  ],
  ['  succeeded', ok(s, 'uncached'), ok(l, 'uncached'), ''],
  [
    'launch, remote image cached (median)',
    fmtMs(s?.cached.launch?.median),
    fmtMs(l?.cached.launch?.median),
    verdict(
      ratio(s?.cached.launch?.median, s?.local.launch?.median),
      (r) => r <= 1.2,
      'svcd ≈ its local launch, ≤ 1.2×',
    ),
  ],
  ['launch, local image by fingerprint (median)', fmtMs(s?.local.launch?.median), fmtMs(l?.local.launch?.median), ''],
  [
    `${s?.concurrent?.n ?? l?.concurrent?.n ?? '-'} concurrent launches of an uncached image (wall)`,
    fmtMs(s?.concurrent?.wallMs),
    fmtMs(l?.concurrent?.wallMs),
    s?.concurrent?.failed
      ? 'MISSED (svcd failures)'
      : verdict(ratio(s?.concurrent?.wallMs, l?.concurrent?.wallMs), (r) => r <= 0.5, '≤ ½ lxd'),
  ],
  [
    '  failed',
    String(s?.concurrent?.failed ?? '-'),
    String(l?.concurrent?.failed ?? '-'),
    s?.concurrent?.failed === 0 ? 'met (0)' : 'MISSED (0)',
  ],
  ['  times each file was sent (metadata/rootfs)', sent(s), sent(l), oneDownload(s) ? 'met (once)' : 'MISSED (once)'],
];
console.log(table(rows));
for (const [who, r] of [
  ['svcd', s],
  ['lxd', l],
] as const) {
  const errs = r
    ? [...r.uncached.errors, ...r.cached.errors, ...r.local.errors, ...Object.keys(r.concurrent?.errors ?? {})]
    : [];
  if (errs.length) console.log(`${who} errors: ${[...new Set(errs)].slice(0, 5).join('; ')}`);
}
