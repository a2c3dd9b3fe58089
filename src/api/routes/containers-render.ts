import type { DbOrTx } from '../../db/types.ts';
import { expandConfig } from '../../desired/expand.ts';
import { listProfiles } from '../../desired/profiles.ts';
import { containerRuntimesOf } from '../../desired/runtime-reads.ts';
import type { ContainerRow, ProfileRow } from '../../desired/schema/index.ts';
import { containerStatus } from '../../desired/container-status.ts';
import { clusteredMemberNames } from '../../cluster/members.ts';

const UNSET = '1970-01-01T00:00:00Z';

/**
 * Render containers with two queries in all (profiles of the project, runtime rows), whatever
 * their number: no query per container on the list path.
 */
export async function renderContainers(db: DbOrTx, profileProject: string, rows: ContainerRow[]) {
  if (rows.length === 0) return [];
  const [profs, runtime, clustered] = await Promise.all([
    listProfiles(db, profileProject),
    containerRuntimesOf(
      db,
      rows.map((r) => r.id),
    ),
    clusteredMemberNames(db),
  ]);
  const byName = new Map<string, ProfileRow>(profs.map((p) => [p.name, p]));
  const rtById = new Map(runtime.map((r) => [r.id, r]));
  return rows.map((c) => {
    const expanded = expandConfig(
      c.profiles.map((n) => byName.get(n)).filter((p): p is ProfileRow => !!p),
      c,
    );
    return {
      row: c,
      runtime: rtById.get(c.id),
      json: {
        name: c.name,
        description: c.description,
        architecture: c.architecture,
        type: 'container',
        profiles: c.profiles,
        ephemeral: c.ephemeral,
        stateful: false,
        config: c.config,
        devices: c.devices,
        expanded_config: expanded.config,
        expanded_devices: expanded.devices,
        created_at: c.createdAt.toISOString(),
        // Last start, as observed (the runtime row keeps it after a stop).
        last_used_at: (rtById.get(c.id)?.startedAt ?? c.lastUsedAt)?.toISOString() ?? UNSET,
        location: clustered.has(c.location) ? c.location : 'none',
        project: c.project,
        ...containerStatus(rtById.get(c.id)),
      },
    };
  });
}
