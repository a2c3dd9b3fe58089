import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import {
  createProject,
  deleteProject,
  listProjects,
  readProject,
  renameProject,
  updateProject,
} from '../../desired/projects.ts';
import { usedByReader, type UsedByReader } from '../../desired/used-by.ts';
import type { ProjectRow } from '../../desired/schema/index.ts';
import { mergeConfig } from '../../desired/config-keys.ts';
import { emitLifecycle } from '../../events/index.ts';
import { optionalString, readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, isLxdEraClient, renamedResponse, sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const CreateBody = v.object({
  name: v.string('expected a string'),
  description: optionalString,
  config: v.optional(stringMap),
});
const UpdateBody = v.object({ description: optionalString, config: v.optional(stringMap) });
const RenameBody = v.object({ name: v.string('expected a string') });

const url = (name: string) => `/1.0/projects/${encodeURIComponent(name)}`;
const editable = (p: ProjectRow) => ({ description: p.description, config: p.config });

export function registerProjectRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus } = deps;
  /** A list shares one used_by reader: the same few queries for any number of projects. */
  const render = async (p: ProjectRow, usedBy: UsedByReader = usedByReader(db)) => ({
    name: p.name,
    description: p.description,
    config: p.config,
    used_by: await usedBy.project(p.name),
  });
  const lifecycle = (action: string, name: string, context: Record<string, unknown> = {}) =>
    emitLifecycle(bus, { action: `project-${action}`, source: url(name), project: name, context });

  route(app, '/1.0/projects', {
    GET: async (c) => {
      const usedBy = usedByReader(db);
      return sync(
        c,
        await renderCollection(c, await listProjects(db), {
          url: (p) => url(p.name),
          render: (p) => render(p, usedBy),
        }),
      );
    },
    POST: async (c) => {
      const body = await readJson(c, CreateBody);
      const p = await createProject(db, body);
      lifecycle('created', p.name);
      c.header('Location', url(p.name));
      return sync(c, {});
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const name = param(c, 'name');
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the write is conditional on the generation read.
    await checkedWrite(
      c.req.header('if-match'),
      () => readProject(db, name),
      (cur) => computeEtag(editable(cur)),
      (cur) =>
        updateProject(
          db,
          name,
          {
            description: body.description ?? (replace ? '' : cur.description),
            // A key sent as "" is unset on PUT as on PATCH (`lxc project unset` PUTs the key emptied).
            config: mergeConfig(replace ? {} : cur.config, body.config),
          },
          cur.generation,
        ),
    );
    lifecycle('updated', name);
    return sync(c, {});
  };

  route(app, '/1.0/projects/:name', {
    GET: async (c) => {
      const p = await readProject(db, param(c, 'name'));
      return sync(c, await render(p), { etag: computeEtag(editable(p)) });
    },
    PUT: update(true),
    PATCH: update(false),
    POST: async (c) => {
      const name = param(c, 'name');
      const { name: newName } = await readJson(c, RenameBody);
      await renameProject(db, name, newName);
      lifecycle('renamed', newName, { old_name: name });
      // The spec lists project rename as async: LXD-era clients wait for an operation, so they get
      // one (already done); others get the spec's 204 + Location.
      if (isLxdEraClient(c)) {
        const op = await deps.ops.startTask(
          { class: 'task', description: 'Renaming project', project: newName, resources: { projects: [url(newName)] } },
          async () => {},
        );
        c.header('Location', url(newName));
        return async(c, op);
      }
      return renamedResponse(c, url(newName));
    },
    DELETE: async (c) => {
      const name = param(c, 'name');
      await deleteProject(db, name);
      lifecycle('deleted', name);
      return sync(c, {}, { status: 202 });
    },
  });
}
