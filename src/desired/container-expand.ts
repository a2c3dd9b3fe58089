/** A container's config and devices expanded with its profiles (in their order, then its own). */
import type { DbOrTx } from '../db/types.ts';
import { cachedProfiles, cachedProject } from './cached-reads.ts';
import { ValidationError } from './errors.ts';
import { expandConfig } from './expand.ts';
import { DEFAULT_PROJECT, profileProjectOf } from './projects.ts';
import type { ContainerRow, ProfileRow } from './schema/index.ts';

export interface ContainerInput {
  description: string;
  architecture: string;
  ephemeral: boolean;
  profiles: string[];
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  /** The member that will hold it (its name): only that member reconciles it. */
  location?: string;
}

/** The profiles a container names, in its order; a missing one → 400. */
export async function loadProfiles(db: DbOrTx, profileProject: string, names: string[]) {
  if (new Set(names).size !== names.length) throw new ValidationError('A profile is listed twice');
  const rows = names.length ? await cachedProfiles(db, profileProject) : [];
  return names.map((n) => {
    const p = rows.find((r) => r.name === n);
    if (!p) throw new ValidationError(`Profile "${n}" does not exist`);
    return p;
  });
}

/** Expanded config and devices (profiles in order, then local). */
export async function expandContainer(
  db: DbOrTx,
  profileProject: string,
  c: Pick<ContainerInput, 'profiles' | 'config' | 'devices'>,
) {
  return expandConfig(await loadProfiles(db, profileProject, c.profiles), { config: c.config, devices: c.devices });
}

/**
 * A stored container's expanded config and devices, as the host should have them: its profiles (those
 * it names that exist, from its project's profile project: `default` without features.profiles), then its own.
 */
export async function expandStoredContainer(
  db: DbOrTx,
  c: Pick<ContainerRow, 'project' | 'profiles' | 'config' | 'devices'>,
) {
  if (!c.profiles.length) return expandConfig([], c);
  const profileProject =
    c.project === DEFAULT_PROJECT ? DEFAULT_PROJECT : profileProjectOf(await cachedProject(db, c.project));
  return expandWith(await cachedProfiles(db, profileProject), c);
}

/** Expanded with the profiles it names that are among `rows` (of its profile project). */
export function expandWith(rows: ProfileRow[], c: Pick<ContainerInput, 'profiles' | 'config' | 'devices'>) {
  const byName = new Map(rows.map((p) => [p.name, p]));
  return expandConfig(
    c.profiles.map((n) => byName.get(n)).filter((p) => p !== undefined),
    c,
  );
}
