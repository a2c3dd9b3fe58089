import { and, asc, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { nicParentOf } from './devices.ts';
import { DEFAULT_PROJECT, profileProjectOf } from './profile-project.ts';
import { lazy } from '../util/lazy.ts';
import { containers, containerSnapshots, images, profiles, projects, storageVolumes } from './schema/index.ts';

/**
 * `used_by` of profiles, projects, storage pools, storage volumes and networks: the URLs of what uses or holds
 * them, with `?project=` when that is not `default` (as LXD writes them).
 *
 * A reader loads each table it needs once, with one query, whatever the number of objects it is
 * asked about: a `recursion=1` list of 50 profiles costs the same three queries as one profile.
 * Make one reader per request (or per transaction: inside one it sees that transaction's writes).
 */
export interface UsedByReader {
  /** Containers and container snapshots that name the profile (of profile project `project`). */
  profile(project: string, name: string): Promise<string[]>;
  /** Everything the project holds: containers, images, profiles, custom volumes. */
  project(name: string): Promise<string[]>;
  /** Profiles and containers whose disks are on the pool, its images and custom volumes. */
  pool(name: string): Promise<string[]>;
  /** Containers (expanded devices: their profiles count) and profiles whose disk devices attach the custom volume. */
  volume(v: { pool: string; type: string; name: string }): Promise<string[]>;
  /** Profiles, then containers (expanded devices: their profiles count), with a nic on the network or host interface (`parent` or `network`). */
  network(name: string): Promise<string[]>;
  /** The nics of live containers (expanded devices) on the network, with the container's volatile hwaddr of each. */
}

type Devices = Record<string, Record<string, string>>;

const enc = encodeURIComponent;
const q = (project: string) => (project === DEFAULT_PROJECT ? '' : `?project=${enc(project)}`);
export const usedByUrls = {
  container: (c: { project: string; name: string }) => `/1.0/containers/${enc(c.name)}${q(c.project)}`,
  snapshot: (c: { project: string; name: string }, snap: string) =>
    `/1.0/containers/${enc(c.name)}/snapshots/${enc(snap)}${q(c.project)}`,
  profile: (p: { project: string; name: string }) => `/1.0/profiles/${enc(p.name)}${q(p.project)}`,
  image: (i: { project: string; fingerprint: string }) => `/1.0/images/${enc(i.fingerprint)}${q(i.project)}`,
  volume: (v: { pool: string; type: string; name: string; project: string }) =>
    `/1.0/storage-pools/${enc(v.pool)}/volumes/${enc(v.type)}/${enc(v.name)}${q(v.project)}`,
};

function groupBy<T>(rows: T[], key: (r: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  return out;
}

export function usedByReader(db: DbOrTx): UsedByReader {
  // Containers and snapshots being deleted no longer use anything (their teardown is under way).
  const liveContainers = lazy(() =>
    db
      .select({
        id: containers.id,
        project: containers.project,
        name: containers.name,
        profiles: containers.profiles,
        config: containers.config,
        devices: containers.devices,
      })
      .from(containers)
      .where(isNull(containers.deletingAt))
      .orderBy(asc(containers.project), asc(containers.name)),
  );
  const liveSnapshots = lazy(() =>
    db
      .select({
        containerId: containerSnapshots.containerId,
        name: containerSnapshots.name,
        profiles: containerSnapshots.profiles,
      })
      .from(containerSnapshots)
      .innerJoin(containers, eq(containers.id, containerSnapshots.containerId))
      .where(and(isNull(containerSnapshots.deletingAt), isNull(containers.deletingAt)))
      .orderBy(asc(containerSnapshots.createdAt), asc(containerSnapshots.name)),
  );
  const allProjects = lazy(() => db.select({ name: projects.name, config: projects.config }).from(projects));
  const allProfiles = lazy(() =>
    db
      .select({ project: profiles.project, name: profiles.name, devices: profiles.devices })
      .from(profiles)
      .orderBy(asc(profiles.project), asc(profiles.name)),
  );
  const liveVolumes = lazy(() =>
    db
      .select({
        pool: storageVolumes.pool,
        project: storageVolumes.project,
        type: storageVolumes.type,
        name: storageVolumes.name,
      })
      .from(storageVolumes)
      .where(isNull(storageVolumes.deletingAt))
      .orderBy(asc(storageVolumes.type), asc(storageVolumes.name)),
  );
  const allImages = lazy(() =>
    db
      .select({ project: images.project, fingerprint: images.fingerprint })
      .from(images)
      .orderBy(asc(images.fingerprint)),
  );

  /** Project name → the project its profiles come from. */
  const profileProjects = lazy(async () => new Map((await allProjects()).map((p) => [p.name, profileProjectOf(p)])));

  /** Each live container with its expanded devices (its profiles in order, then its own). */
  const expandedContainers = lazy(async () => {
    const [cts, profs, pp] = await Promise.all([liveContainers(), allProfiles(), profileProjects()]);
    const byKey = new Map(profs.map((p) => [`${p.project}\0${p.name}`, p.devices]));
    return cts.map((c) => {
      const from = pp.get(c.project) ?? DEFAULT_PROJECT;
      const devices: Devices = {};
      for (const layer of [...c.profiles.map((n) => byKey.get(`${from}\0${n}`) ?? {}), c.devices])
        Object.assign(devices, layer);
      return { ...c, expanded: devices };
    });
  });

  const disksOn = (devices: Devices, pool: string, source?: string) =>
    Object.values(devices).some(
      (d) => d.type === 'disk' && d.pool === pool && (source === undefined || d.source === source),
    );
  /** A nic names its network by `network` or (as `lxc network attach` sends it) by `parent`. */
  const nicsOn = (devices: Devices, network: string) =>
    Object.values(devices).some((d) => d.type === 'nic' && nicParentOf(d) === network);

  return {
    async profile(project, name) {
      const [cts, snaps, pp] = await Promise.all([liveContainers(), liveSnapshots(), profileProjects()]);
      const snapsOf = groupBy(snaps, (s) => s.containerId);
      const out: string[] = [];
      for (const c of cts) {
        if ((pp.get(c.project) ?? DEFAULT_PROJECT) !== project) continue;
        if (c.profiles.includes(name)) out.push(usedByUrls.container(c));
        for (const s of snapsOf.get(c.id) ?? [])
          if (s.profiles.includes(name)) out.push(usedByUrls.snapshot(c, s.name));
      }
      return out;
    },

    async project(name) {
      const [cts, imgs, profs, vols] = await Promise.all([liveContainers(), allImages(), allProfiles(), liveVolumes()]);
      return [
        ...cts.filter((c) => c.project === name).map(usedByUrls.container),
        ...imgs.filter((i) => i.project === name).map(usedByUrls.image),
        ...profs.filter((p) => p.project === name).map(usedByUrls.profile),
        ...vols.filter((v) => v.project === name && v.type === 'custom').map(usedByUrls.volume),
      ];
    },

    async pool(name) {
      const [profs, cts, vols, imgs] = await Promise.all([
        allProfiles(),
        expandedContainers(),
        liveVolumes(),
        allImages(),
      ]);
      const out = profs.filter((p) => disksOn(p.devices, name)).map(usedByUrls.profile);
      const onPool = vols.filter((v) => v.pool === name);
      // A container is on the pool by its devices (root disk, attached volumes) or by a root volume still there.
      const rootVolumes = new Set(onPool.filter((v) => v.type === 'container').map((v) => `${v.project}\0${v.name}`));
      out.push(
        ...cts
          .filter((c) => disksOn(c.expanded, name) || rootVolumes.has(`${c.project}\0${c.name}`))
          .map(usedByUrls.container),
      );
      const listed = new Set(out);
      for (const v of onPool) {
        if (v.type === 'container') {
          // A root volume whose container is gone from the table is still on the pool: name the volume.
          const url = usedByUrls.container(v);
          if (!listed.has(url)) out.push(usedByUrls.volume({ ...v, pool: name }));
        } else if (v.type === 'image') {
          // An image volume is listed as the image, in every project that knows it (or as the volume if none does).
          const holders = imgs.filter((i) => i.fingerprint === v.name);
          out.push(...(holders.length ? holders.map(usedByUrls.image) : [usedByUrls.volume(v)]));
        } else {
          out.push(usedByUrls.volume(v));
        }
      }
      return [...new Set(out)];
    },

    async volume(v) {
      if (v.type !== 'custom') return [];
      const [cts, profs] = await Promise.all([expandedContainers(), allProfiles()]);
      return [
        ...cts.filter((c) => disksOn(c.expanded, v.pool, v.name)).map(usedByUrls.container),
        ...profs.filter((p) => disksOn(p.devices, v.pool, v.name)).map(usedByUrls.profile),
      ];
    },

    async network(name) {
      const [profs, cts] = await Promise.all([allProfiles(), expandedContainers()]);
      return [
        ...profs.filter((p) => nicsOn(p.devices, name)).map(usedByUrls.profile),
        ...cts.filter((c) => nicsOn(c.expanded, name)).map(usedByUrls.container),
      ];
    },
  };
}

/** At most `max` URLs of a used_by list, for an error message. */
export function describeUsers(urls: string[], max = 5): string {
  const shown = urls.slice(0, max).join(', ');
  return urls.length > max ? `${shown} and ${urls.length - max} more` : shown;
}
