import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { readContainer } from '../../desired/containers.ts';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import { validateContainerName } from '../../desired/names.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { param } from '../router.ts';
import { collectionOf, instanceRoute } from '../instance-collection.ts';

/**
 * `/1.0/containers/<name>/logs`: the files in the container's log directory (lxc.log, console.log,
 * exec output), for containers that exist, existed or never did. Reads only: nothing is created,
 * and only plain files directly in that directory are served or removed (log-files.ts).
 */
export function registerContainerLogRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { logs } = deps.containerHost;
  const where = (c: Context<AppEnv>) => ({ project: c.get('project'), name: validateContainerName(param(c, 'name')) });
  const file = (c: Context<AppEnv>) => param(c, 'file');
  const url = (c: Context<AppEnv>, name: string, f: string) => {
    const project = c.get('project');
    return `/1.0/${collectionOf(c)}/${encodeURIComponent(name)}/logs/${encodeURIComponent(f)}${project === 'default' ? '' : `?project=${encodeURIComponent(project)}`}`;
  };

  instanceRoute(app, '/:name/logs', {
    GET: async (c) => {
      const ct = where(c);
      return sync(
        c,
        (await logs.list(ct)).map((f) => url(c, ct.name, f)),
      );
    },
  });

  instanceRoute(app, '/:name/logs/:file', {
    GET: async (c) => {
      const ct = where(c);
      const f = file(c);
      const opened = await logs.open(ct, f);
      if (!opened) throw new NotFoundError(`Log file "${f}" of container "${ct.name}" not found`);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(opened.size));
      if (opened.size === 0) {
        await opened.close();
        return c.body(null, 200);
      }
      // LXC may still be appending: serve the bytes there were when the file was opened.
      return c.body(Readable.toWeb(opened.stream()) as ReadableStream);
    },
    DELETE: async (c) => {
      const ct = where(c);
      const { name } = ct;
      const f = file(c);
      if (
        f === 'lxc.log' &&
        (await readContainer(deps.db, c.get('project'), name).then(
          () => true,
          (e: unknown) => (e instanceof NotFoundError ? false : Promise.reject(e)),
        ))
      )
        throw new ValidationError(
          'The lxc.log of an existing container cannot be deleted (svcd reads it to tell a power-off from a crash)',
        );
      if (!(await logs.remove(ct, f))) throw new NotFoundError(`Log file "${f}" of container "${name}" not found`);
      return sync(c, {});
    },
  });
}
