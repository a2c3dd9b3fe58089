import type { Context } from 'hono';
import type * as v from 'valibot';
import {
  CONTAINER_KIND,
  expandStoredContainer,
  insertContainer,
  readContainer,
  splitVolatile,
  validateContainer,
  type ContainerInput,
} from '../../desired/containers.ts';
import { ValidationError } from '../../desired/errors.ts';
import { checkContainerProxies } from '../../desired/proxy-checks.ts';
import { expandInstanceType } from '../../desired/instance-types.ts';
import { cachedImageChoice } from '../../desired/cached-reads.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import type { ContainerSource } from '../../desired/schema/index.ts';
import { readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import { migrationMode, pullSource } from '../migration-bodies.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { async } from '../envelope.ts';
import { importBackup } from './container-import.ts';
import { imagePropertyKeys, touchImageLastUsed } from '../../desired/images.ts';
import { parseRemoteSource } from '../remote-source.ts';
import { createFromRemote } from './container-from-remote.ts';
import {
  insertSnapshotCopies,
  plannedSnapshotCopies,
  readContainerSnapshot,
} from '../../desired/container-snapshots.ts';
import { CreateBody, type ContainerRouteContext, type Source } from './container-bodies.ts';

/** `POST /1.0/containers`: a container from an image (local or pulled), a copy, none, or a backup tarball (`lxc import`). */
export async function createContainerRoute(
  c: Context<AppEnv>,
  deps: ApiDeps,
  ctx: ContainerRouteContext,
): Promise<Response> {
  const { db } = deps;
  const { profileProject, op } = ctx;
  // `lxc import`: the body is a backup tarball.
  if (/^application\/octet-stream\b/i.test(c.req.header('content-type') ?? '')) return importBackup(c, deps);
  const body = await readJson(c, CreateBody);
  if (body.type && body.type !== 'container')
    throw new ValidationError(
      `Invalid "type" "${body.type}": this host runs containers only (no virtual machines), so "type" must be "container"`,
    );
  const project = c.get('project');
  const pp = await profileProject(c);
  const migrating = body.source?.type === 'migration';
  // A container from another server comes with the keys it had there; its volatile.* keys are that host's.
  const config = {
    ...(body.instance_type ? expandInstanceType(body.instance_type) : {}),
    ...(migrating ? splitVolatile(body.config ?? {}).rest : (body.config ?? {})),
  };
  const input: ContainerInput = {
    description: body.description ?? '',
    architecture: body.architecture || deps.host.architectures[0] || 'x86_64',
    ephemeral: body.ephemeral ?? false,
    profiles: body.profiles ?? ['default'],
    config,
    devices: body.devices ?? {},
  };
  const expanded = await validateContainer(
    db,
    pp,
    input,
    undefined,
    deps.containers.probeNic,
    deps.containers.nicHost && { probe: deps.containers.nicHost },
  );
  await checkContainerProxies(db, undefined, expanded.devices, deps.containers.listenProbe);
  if (migrating) {
    const s = body.source!;
    const mode = migrationMode(s.mode);
    if (s.refresh) throw new ValidationError('Refreshing an existing container from another server is not supported');
    const pool = Object.values(expanded.devices).find((d) => d.type === 'disk' && d.path === '/')?.pool ?? '';
    const baseImage = s['base-image'] || body.config?.['volatile.base_image'];
    return async(
      c,
      await deps.migration.receiveContainer({
        project,
        name: body.name,
        input,
        profileProject: pp,
        pool,
        mode,
        ...pullSource(s),
        live: s.live ?? false,
        containerOnly: s.container_only ?? s.instance_only ?? false,
        ...(baseImage ? { baseImage } : {}),
      }),
    );
  }
  if (body.source?.type === 'image' && body.source.mode === 'pull')
    return createFromRemote(c, deps, {
      project,
      name: body.name,
      input,
      profileProject: pp,
      source: parseRemoteSource(body.source),
    });
  // A copy of a container another member holds: pulled from it, as a migration.
  const s = body.source;
  const fromMember =
    s?.type === 'copy' && s.source && (await deps.moves?.copySource(project, s.source, s.container_only ?? false));
  if (fromMember)
    return async(
      c,
      await deps.migration.receiveContainer({
        project,
        name: body.name,
        // the source's volatile keys are its host's, as for any migration
        input: { ...input, config: splitVolatile(input.config).rest },
        profileProject: pp,
        pool: Object.values(expanded.devices).find((d) => d.type === 'disk' && d.path === '/')?.pool ?? '',
        mode: 'pull',
        ...fromMember,
        live: false,
        containerOnly: s?.container_only ?? false,
      }),
    );
  const source = await resolveSource(body.source);
  const operation = await writeWithOperation(deps, async (tx) => {
    // A copy of a whole container takes its snapshots along (unless container_only).
    const copies =
      source.type === 'copy' && !source.snapshot && !source.containerOnly
        ? await plannedSnapshotCopies(tx, source.containerId)
        : [];
    const withSnapshots: ContainerSource =
      source.type === 'copy' && copies.length > 0
        ? { ...source, snapshots: copies.map((p) => ({ from: p.from.id, to: p.to })) }
        : source;
    await lockProfiles(tx, pp, input.profiles);
    const row = await insertContainer(
      tx,
      project,
      body.name,
      { ...input, location: deps.node },
      withSnapshots,
      'stopped',
    );
    // The root pool of copied snapshots (none for most creates: no read of the profiles again).
    const rootPool = copies.length
      ? (Object.values((await expandStoredContainer(tx, row)).devices).find((d) => d.type === 'disk' && d.path === '/')
          ?.pool ?? '')
      : '';
    await insertSnapshotCopies(
      tx,
      row.id,
      copies,
      rootPool,
      async (s) =>
        (await expandStoredContainer(tx, { project, profiles: s.profiles, config: s.config, devices: s.devices }))
          .devices,
    );
    return {
      operation: op(c, row, 'Creating container'),
      target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
    };
  });
  return async(c, operation);

  async function resolveSource(s: v.InferOutput<typeof Source> | undefined): Promise<ContainerSource> {
    if (!s || s.type === 'none') return { type: 'none' };
    if (s.type === 'image') {
      if (s.mode && s.mode !== 'local')
        throw new ValidationError(`Image source mode "${s.mode}" is not supported (local or pull)`);
      const { fingerprint, properties } = await cachedImageChoice(db, project, {
        alias: s.alias,
        fingerprint: s.fingerprint,
        properties: s.properties,
      });
      await touchImageLastUsed(db, project, fingerprint);
      input.config = { ...input.config, ...imagePropertyKeys(properties) };
      return { type: 'image', fingerprint };
    }
    if (s.type === 'copy') {
      if (!s.source) throw new ValidationError('Missing "source.source": the container to copy');
      const [srcName, snap] = s.source.split('/', 2) as [string, string | undefined];
      const src = await readContainer(db, project, srcName);
      if (snap) await readContainerSnapshot(db, src.id, snap);
      return {
        type: 'copy',
        containerId: src.id,
        ...(snap ? { snapshot: snap } : {}),
        containerOnly: s.container_only ?? false,
      };
    }
    throw new ValidationError(`Container source type "${s.type}" is not supported (use image, copy or none)`);
  }
}
