/** How the dashboard writes numbers and addresses, pure (shared by the bundle and its tests). */

export function formatBytes(n: number | undefined): string {
  if (!n || n <= 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** CPU use between two samples of cgroup usage (ns), as a percentage of one core; undefined without two. */
export function cpuPercent(
  prev: { usageNs: number; atMs: number } | undefined,
  next: { usageNs: number; atMs: number },
): number | undefined {
  if (!prev || next.atMs <= prev.atMs || next.usageNs < prev.usageNs) return undefined;
  return ((next.usageNs - prev.usageNs) / 1e6 / (next.atMs - prev.atMs)) * 100;
}

export const formatPercent = (p: number | undefined) =>
  p === undefined ? '–' : `${p < 10 ? p.toFixed(1) : Math.round(p)}%`;

interface NetworkState {
  addresses?: { family: string; address: string; scope: string }[];
}

/** The global IPv4 addresses of a container's state, loopback left out. */
export function ipv4Of(network: Record<string, NetworkState> | null | undefined): string[] {
  const out: string[] = [];
  for (const [name, nic] of Object.entries(network ?? {})) {
    if (name === 'lo') continue;
    for (const a of nic.addresses ?? [])
      if (a.family === 'inet' && a.scope !== 'local') out.push(`${a.address} (${name})`);
  }
  return out;
}

/** The image a container came from, as its config records it. */
export function imageOf(config: Record<string, string> | undefined): string {
  const c = config ?? {};
  const described = c['image.description'] ?? [c['image.os'], c['image.release']].filter(Boolean).join(' ');
  if (described) return described;
  const fp = c['volatile.base_image'];
  return fp ? fp.slice(0, 12) : '–';
}

/** The container an event is about (lifecycle source, or an operation's resources), if any. */
export function containersOfEvent(ev: { type?: string; metadata?: unknown }): string[] {
  const m = (ev.metadata ?? {}) as {
    source?: string;
    resources?: Record<string, string[] | null> | null;
  };
  const names = new Set<string>();
  const add = (url: string) => {
    const match = /^\/1\.0\/(?:containers|instances)\/([^/?]+)/.exec(url);
    if (match) names.add(decodeURIComponent(match[1]!));
  };
  if (ev.type === 'lifecycle' && m.source) add(m.source);
  if (ev.type === 'operation')
    for (const u of [...(m.resources?.containers ?? []), ...(m.resources?.instances ?? [])]) add(u);
  return [...names];
}
