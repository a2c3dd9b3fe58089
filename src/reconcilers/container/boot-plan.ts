import type { ContainerRow } from '../../desired/schema/index.ts';
import { parseOptionalBool } from '../../util/parse-bool.ts';

const flag = parseOptionalBool;
const int = (v: string | undefined, d: number) => (v !== undefined && /^-?\d+$/.test(v) ? Number(v) : d);

export interface BootPlan {
  /** Desired power to set before converging (autostart overrides the last desired state). */
  setPower: { id: string; power: 'running' | 'stopped' }[];
  /**
   * Containers to start, higher `priority` first (ties by name). One priority is a group: its containers start
   * together; the next group waits for them, then for the longest `delayMs` among them.
   */
  order: { id: string; priority: number; delayMs: number }[];
}

/**
 * What should run when svcd starts, for containers found stopped: `boot.autostart=true` always,
 * `false` never, unset → the last desired state; started by `boot.autostart.priority` (higher
 * first; ties by name), with `boot.autostart.delay` seconds after each group. Pure.
 */
export function computeBootPlan(
  rows: Pick<ContainerRow, 'id' | 'name' | 'config' | 'power' | 'deletingAt'>[],
  observed: (id: string) => string | undefined,
  expandedConfig: (row: Pick<ContainerRow, 'id'>) => Record<string, string>,
): BootPlan {
  const setPower: BootPlan['setPower'] = [];
  const starting: { id: string; name: string; priority: number; delayMs: number }[] = [];
  for (const r of rows) {
    if (r.deletingAt) continue;
    const state = observed(r.id) ?? 'STOPPED';
    if (state !== 'STOPPED') continue;
    const cfg = expandedConfig(r);
    const auto = flag(cfg['boot.autostart']);
    const wantUp = auto ?? r.power !== 'stopped';
    if (auto === true && r.power === 'stopped') setPower.push({ id: r.id, power: 'running' });
    if (auto === false && r.power !== 'stopped') setPower.push({ id: r.id, power: 'stopped' });
    if (wantUp)
      starting.push({
        id: r.id,
        name: r.name,
        priority: int(cfg['boot.autostart.priority'], 0),
        delayMs: int(cfg['boot.autostart.delay'], 0) * 1000,
      });
  }
  // ties by name in byte order, as LXD compares names (and without ICU: localeCompare's first call builds a collator)
  starting.sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { setPower, order: starting.map(({ id, priority, delayMs }) => ({ id, priority, delayMs })) };
}

/**
 * Stop order for a host shutdown: groups by `boot.stop.priority` (higher first); a group stops in
 * parallel, each container given its `boot.host_shutdown_timeout` (default 30 s) before a kill.
 */
export function computeStopGroups(
  rows: { id: string; config: Record<string, string> }[],
): { priority: number; members: { id: string; timeoutMs: number }[] }[] {
  const groups = new Map<number, { id: string; timeoutMs: number }[]>();
  for (const r of rows) {
    const p = int(r.config['boot.stop.priority'], 0);
    const list = groups.get(p) ?? [];
    list.push({ id: r.id, timeoutMs: int(r.config['boot.host_shutdown_timeout'], 30) * 1000 });
    groups.set(p, list);
  }
  return [...groups.entries()].sort((a, b) => b[0] - a[0]).map(([priority, members]) => ({ priority, members }));
}
