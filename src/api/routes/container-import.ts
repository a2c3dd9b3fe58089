import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { insertRestoredSnapshots, withRootPool } from '../../desired/container-snapshots.ts';
import {
  CONTAINER_KIND,
  expandContainer,
  insertContainer,
  splitVolatile,
  validateContainer,
  type ContainerInput,
} from '../../desired/containers.ts';
import { DomainError, ValidationError } from '../../desired/errors.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import { profileProjectOf, readProject } from '../../desired/projects.ts';
import type { AppEnv } from '../context.ts';
import { containerResources } from '../instance-collection.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { async } from '../envelope.ts';

/** volatile.* keys are the host's own: a restored container or snapshot starts without them. */
const withoutVolatile = (config: Record<string, string>) => splitVolatile(config).rest;

const header = (c: Context<AppEnv>, name: string) => c.req.header(`x-svc-${name}`) ?? c.req.header(`x-lxd-${name}`);

/**
 * `POST /1.0/containers` with a backup tarball as the body (`lxc import`): the container described
 * by its backup/index.yaml is created (name overridable with X-SVC-name / X-LXD-name, root pool with
 * X-SVC-pool) with the snapshots it packs (their config and creation dates), and the reconciler
 * unpacks the tarball into the snapshots and the root volume. A tarball that fails the checks of
 * scanBackup, or a container or snapshot that would not validate, is a 400 and nothing is made.
 */
export async function importBackup(c: Context<AppEnv>, deps: ApiDeps): Promise<Response> {
  const { db } = deps;
  const { backups } = deps.containerHost;
  const project = c.get('project');
  if (!c.req.raw.body) throw new ValidationError('Empty body: expected a backup tarball');
  // Every member is checked before anything is made (paths, links, kinds; index and config agree).
  const upload = await backups.receive(c.req.raw.body);
  try {
    const { index, config: backup, snapshots } = upload;
    const saved = backup.container;
    const name = header(c, 'name') || index.name;
    const pool = header(c, 'pool');
    const devices = { ...saved.devices };
    if (pool) devices.root = { type: 'disk', path: '/', pool };
    const input: ContainerInput = {
      description: saved.description,
      architecture: saved.architecture || (deps.host.architectures[0] ?? 'x86_64'),
      ephemeral: saved.ephemeral,
      profiles: saved.profiles,
      config: withoutVolatile(saved.config),
      devices,
    };
    const profileProject = profileProjectOf(await readProject(db, project));
    await validateContainer(db, profileProject, input);
    // The snapshots as they were, their root disk on the new container's pool (as a copy's are).
    const rootPool =
      Object.values((await expandContainer(db, profileProject, input)).devices).find(
        (d) => d.type === 'disk' && d.path === '/',
      )?.pool ?? '';
    const snapRows: Parameters<typeof insertRestoredSnapshots>[2] = [];
    for (const s of snapshots) {
      const snap = {
        description: '',
        architecture: s.architecture || input.architecture,
        ephemeral: s.ephemeral,
        profiles: s.profiles,
        config: withoutVolatile(s.config),
        devices: s.devices,
      };
      try {
        snap.devices = withRootPool(snap.devices, (await expandContainer(db, profileProject, snap)).devices, rootPool);
        await validateContainer(db, profileProject, snap);
      } catch (e) {
        if (e instanceof DomainError) throw new ValidationError(`Invalid backup: snapshot "${s.name}": ${e.message}`);
        throw e;
      }
      const created = Date.parse(s.created_at);
      snapRows.push({
        id: randomUUID(),
        name: s.name,
        architecture: snap.architecture,
        ephemeral: snap.ephemeral,
        profiles: snap.profiles,
        config: snap.config,
        devices: snap.devices,
        createdAt: new Date(created > 0 ? created : Date.now()),
      });
    }
    // The tarball is in place before the row commits (the reconciler unpacks it as soon as it sees the row).
    const id = randomUUID();
    const file = await upload.place(id);
    try {
      const op = await writeWithOperation(deps, async (tx) => {
        const source = {
          type: 'backup' as const,
          file,
          ...(snapRows.length ? { snapshots: snapRows.map((r) => ({ name: r.name, id: r.id })) } : {}),
        };
        // The profiles the container and its snapshots name stay until the rows commit (a concurrent delete waits).
        await lockProfiles(tx, profileProject, [
          ...new Set([...input.profiles, ...snapRows.flatMap((r) => r.profiles)]),
        ]);
        const row = await insertContainer(tx, project, name, { ...input, location: deps.node }, source, 'stopped', id);
        await insertRestoredSnapshots(tx, row.id, snapRows);
        return {
          operation: {
            class: 'task',
            description: 'Restoring container from backup',
            project,
            resources: containerResources(c, row),
          },
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });
      return async(c, op);
    } catch (e) {
      await backups.removeImport(file);
      throw e;
    }
  } finally {
    await upload.discard();
  }
}
