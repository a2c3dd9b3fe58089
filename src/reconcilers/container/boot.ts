import { eq } from 'drizzle-orm';
import type { Db } from '../../db/types.ts';
import { bumpContainer, requestBootStarts } from '../../desired/containers.ts';
import { expandConfig } from '../../desired/expand.ts';
import { containers, profiles } from '../../desired/schema/index.ts';
import type { LxcAdapter } from '../adapters.ts';
import { computeBootPlan, computeStopGroups, type BootPlan } from './boot-plan.ts';

/** This member's containers (the others' are another member's to boot), with their expanded config. */
async function expandedConfigs(db: Db, node: string) {
  const [rows, profs] = await Promise.all([
    db.select().from(containers).where(eq(containers.location, node)),
    db.select().from(profiles),
  ]);
  const byKey = new Map(profs.map((p) => [`${p.project}/${p.name}`, p]));
  const expanded = new Map<string, Record<string, string>>();
  for (const r of rows) {
    // Profiles of a project without features.profiles live in `default`: look in both.
    const ps = r.profiles
      .map((n) => byKey.get(`${r.project}/${n}`) ?? byKey.get(`default/${n}`))
      .filter((p) => p !== undefined);
    expanded.set(r.id, expandConfig(ps, r).config);
  }
  return { rows, expanded };
}

async function observedStates(lxc: Pick<LxcAdapter, 'list'>, lxcPath: string): Promise<Map<string, string>> {
  const listing = await lxc.list(lxcPath);
  return new Map(listing.map((l) => [l.name, l.state]));
}

/**
 * At svcd start: decide what should run (boot.autostart), record autostart's verdict as desired
 * power (a desired write on the user's behalf: it is what they configured), and return the start
 * order for the boot sequencer.
 */
export async function planContainerBoot(deps: {
  db: Db;
  node: string;
  lxcPath: string;
  lxc: Pick<LxcAdapter, 'list'>;
}): Promise<{
  setPower: BootPlan['setPower'];
  order: { id: string; priority: number; delayMs: number; generation: number }[];
}> {
  const [{ rows, expanded }, states] = await Promise.all([
    expandedConfigs(deps.db, deps.node),
    observedStates(deps.lxc, deps.lxcPath),
  ]);
  const plan = computeBootPlan(
    rows,
    (id) => states.get(id),
    (r) => expanded.get(r.id) ?? {},
  );
  for (const { id, power } of plan.setPower) await bumpContainer(deps.db, id, { power });
  // Each container to start gets a start request (a new generation), so the boot sequencer can wait for that
  // start to converge: one statement for all of them (the first start waits for it).
  const generations = await requestBootStarts(
    deps.db,
    plan.order.map((o) => o.id),
  );
  const order = plan.order.flatMap((o) => {
    const generation = generations.get(o.id);
    return generation === undefined ? [] : [{ ...o, generation }];
  });
  return { setPower: plan.setPower, order };
}

/**
 * A host shutdown: stop every running container by boot.stop.priority (higher first, equal ones in
 * parallel), each within its boot.host_shutdown_timeout before it is killed. Desired state is left
 * as it is, so the containers come back at the next start. Reconcilers and observers must already
 * be stopped, or they would start the containers again.
 */
export async function shutdownContainers(deps: {
  db: Db;
  node: string;
  lxcPath: string;
  lxc: Pick<LxcAdapter, 'list' | 'stop'>;
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
}): Promise<void> {
  const [{ rows, expanded }, states] = await Promise.all([
    expandedConfigs(deps.db, deps.node),
    observedStates(deps.lxc, deps.lxcPath),
  ]);
  const running = rows
    .filter((r) => (states.get(r.id) ?? 'STOPPED') !== 'STOPPED')
    .map((r) => ({ id: r.id, name: r.name, config: expanded.get(r.id) ?? {} }));
  const names = new Map(running.map((r) => [r.id, r.name]));
  for (const group of computeStopGroups(running)) {
    deps.log.info(
      { priority: group.priority, containers: group.members.map((m) => names.get(m.id)) },
      'host shutdown: stopping containers',
    );
    await Promise.all(
      group.members.map((m) =>
        deps.lxc
          .stop({ name: m.id, lxcPath: deps.lxcPath, timeoutMs: m.timeoutMs })
          .catch((e: unknown) =>
            deps.log.warn({ err: e, container: names.get(m.id) }, 'host shutdown: container did not stop'),
          ),
      ),
    );
  }
}
