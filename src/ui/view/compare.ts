/**
 * Desired against observed for one container, pure: rows of (what, desired, observed) with the ones
 * that differ marked. The desired side is what the API was asked (the expanded config and devices, the
 * desired power state); the observed side is what the host shows (state, applied generation, live nics).
 */
export interface CompareRow {
  what: string;
  desired: string;
  observed: string;
  differs: boolean;
}

export interface CompareInput {
  desiredPower: string | undefined;
  status: string | undefined;
  generation: number | undefined;
  observedGeneration: number | undefined;
  error: string | undefined;
  expandedConfig: Record<string, string>;
  expandedDevices: Record<string, Record<string, string>>;
  pendingRestart: string[];
  network: Record<string, { hwaddr?: string; host_name?: string; state?: string }> | undefined;
}

const POWER_STATUS: Record<string, string> = { running: 'Running', stopped: 'Stopped', frozen: 'Frozen' };

export function compareContainer(i: CompareInput): CompareRow[] {
  const rows: CompareRow[] = [];
  const wanted = i.desiredPower ? (POWER_STATUS[i.desiredPower] ?? i.desiredPower) : '–';
  rows.push({ what: 'power state', desired: wanted, observed: i.status ?? '–', differs: wanted !== (i.status ?? '–') });
  if (i.generation !== undefined)
    rows.push({
      what: 'generation',
      desired: String(i.generation),
      observed: i.observedGeneration ? `${i.observedGeneration} applied` : 'none applied',
      differs: (i.observedGeneration ?? 0) < i.generation,
    });
  if (i.error)
    rows.push({ what: 'reconciler', desired: 'no error', observed: 'failed (the error is above)', differs: true });
  const pending = new Set(i.pendingRestart);
  for (const [k, v] of Object.entries(i.expandedConfig).sort(([a], [b]) => a.localeCompare(b))) {
    if (k.startsWith('volatile.') || k.startsWith('image.')) continue;
    rows.push({ what: k, desired: v, observed: pending.has(k) ? 'waits for a restart' : v, differs: pending.has(k) });
  }
  const running = i.status === 'Running' || i.status === 'Frozen';
  for (const [name, d] of Object.entries(i.expandedDevices).sort(([a], [b]) => a.localeCompare(b))) {
    if (d.type !== 'nic') continue;
    const live = i.network?.[d.name ?? name];
    const want = running ? 'present' : 'absent (stopped)';
    const have = live
      ? `present${live.host_name ? ` (${live.host_name})` : ''}${live.state ? `, ${live.state}` : ''}`
      : running
        ? 'missing'
        : 'absent (stopped)';
    rows.push({ what: `nic ${name}`, desired: want, observed: have, differs: running && !live });
  }
  return rows;
}
