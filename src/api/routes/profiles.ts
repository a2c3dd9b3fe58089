import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { profileProjectOf, readProject } from '../../desired/projects.ts';
import {
  bumpContainersUsingProfile,
  createProfile,
  deleteProfile,
  listProfiles,
  readProfile,
  renameProfile,
  updateProfile,
  type ProfileInput,
} from '../../desired/profiles.ts';
import { usedByReader, type UsedByReader } from '../../desired/used-by.ts';
import { CONTAINER_KIND } from '../../desired/containers.ts';
import { HostFailureError } from '../../desired/errors.ts';
import type { ProfileRow } from '../../desired/schema/index.ts';
import { mergeConfig } from '../../desired/config-keys.ts';
import { emitLifecycle } from '../../events/index.ts';
import { deviceMap, optionalString, readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { renamedResponse, sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const CreateBody = v.object({
  name: v.string('expected a string'),
  description: optionalString,
  config: v.optional(stringMap),
  devices: v.optional(deviceMap),
});
const UpdateBody = v.object({
  description: optionalString,
  config: v.optional(stringMap),
  devices: v.optional(deviceMap),
});
const RenameBody = v.object({ name: v.string('expected a string') });

const editable = (p: ProfileRow) => ({ description: p.description, config: p.config, devices: p.devices });

export function registerProfileRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus } = deps;
  /** Profiles live in the request's project when it has features.profiles, else in `default`. */
  const profileProject = async (c: Context<AppEnv>) => profileProjectOf(await readProject(db, c.get('project')));
  const url = (c: Context<AppEnv>, name: string) => {
    const project = c.get('project');
    return `/1.0/profiles/${encodeURIComponent(name)}${project === 'default' ? '' : `?project=${encodeURIComponent(project)}`}`;
  };
  /** A list shares one used_by reader: the same few queries for any number of profiles. */
  const render = async (p: ProfileRow, usedBy: UsedByReader = usedByReader(db)) => ({
    name: p.name,
    description: p.description,
    config: p.config,
    devices: p.devices,
    used_by: await usedBy.profile(p.project, p.name),
  });
  const lifecycle = (c: Context<AppEnv>, action: string, name: string, context: Record<string, unknown> = {}) =>
    emitLifecycle(bus, { action: `profile-${action}`, source: url(c, name), project: c.get('project'), context });

  route(app, '/1.0/profiles', {
    GET: async (c) => {
      const usedBy = usedByReader(db);
      return sync(
        c,
        await renderCollection(c, await listProfiles(db, await profileProject(c)), {
          url: (p) => url(c, p.name),
          render: (p) => render(p, usedBy),
        }),
      );
    },
    POST: async (c) => {
      const body = await readJson(c, CreateBody);
      const p = await createProfile(db, await profileProject(c), body.name, {
        description: body.description ?? '',
        config: body.config ?? {},
        devices: body.devices ?? {},
      });
      lifecycle(c, 'created', p.name);
      c.header('Location', url(c, p.name));
      return sync(c, {});
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const name = param(c, 'name');
    const project = await profileProject(c);
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the write is conditional on the generation read.
    await checkedWrite(
      c.req.header('if-match'),
      () => readProfile(db, project, name),
      (cur) => computeEtag(editable(cur)),
      (cur) =>
        applyProfile(
          project,
          name,
          // A key sent as "" is unset, on PUT as on PATCH: `lxc profile unset` PUTs the profile with the key emptied.
          replace
            ? { description: body.description ?? '', config: mergeConfig({}, body.config), devices: body.devices ?? {} }
            : {
                description: body.description ?? cur.description,
                config: mergeConfig(cur.config, body.config),
                devices: { ...cur.devices, ...body.devices },
              },
          editable(cur),
          cur.generation,
        ),
    );
    lifecycle(c, 'updated', name);
    return sync(c, {});
  };

  /**
   * Write a profile and bring every container that uses it there, running ones included, before answering
   * (the spec's PUT is sync). If one of them cannot take it, the profile is put back as it was (and those
   * containers with it) and the answer names the container and the reason.
   */
  async function applyProfile(
    project: string,
    name: string,
    next: ProfileInput,
    previous: ProfileInput,
    generation: number,
  ): Promise<void> {
    const users = await db.transaction(async (tx) => {
      await updateProfile(tx, project, name, next, generation);
      return bumpContainersUsingProfile(tx, project, name);
    });
    const outcomes = await Promise.all(
      users.map(async (u) => {
        const wait = deps.convergence.wait(CONTAINER_KIND, u.id, u.generation);
        deps.reconcile.enqueue(CONTAINER_KIND, u.id, `profile ${name} changed`);
        return { u, out: await wait };
      }),
    );
    const failed = outcomes.find((o) => !o.out.ok);
    if (!failed || failed.out.ok) return;
    const back = await db.transaction(async (tx) => {
      await updateProfile(tx, project, name, previous);
      return bumpContainersUsingProfile(tx, project, name);
    });
    for (const u of back) deps.reconcile.enqueue(CONTAINER_KIND, u.id, `profile ${name} restored`);
    throw new HostFailureError(
      `Failed to apply profile "${name}" to container "${failed.u.name}": ${failed.out.error}; the profile was left unchanged`,
    );
  }

  route(app, '/1.0/profiles/:name', {
    GET: async (c) => {
      const p = await readProfile(db, await profileProject(c), param(c, 'name'));
      return sync(c, await render(p), { etag: computeEtag(editable(p)) });
    },
    PUT: update(true),
    PATCH: update(false),
    POST: async (c) => {
      const name = param(c, 'name');
      const { name: newName } = await readJson(c, RenameBody);
      await renameProfile(db, await profileProject(c), name, newName);
      lifecycle(c, 'renamed', newName, { old_name: name });
      return renamedResponse(c, url(c, newName));
    },
    DELETE: async (c) => {
      const name = param(c, 'name');
      await deleteProfile(db, await profileProject(c), name);
      lifecycle(c, 'deleted', name);
      return sync(c, {}, { status: 202 });
    },
  });
}
