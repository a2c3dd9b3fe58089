import { Readable } from 'node:stream';
import type { Hono } from 'hono';
import * as v from 'valibot';
import { readContainer } from '../../desired/containers.ts';
import { readJson } from '../body.ts';
import { createConsoleSession } from '../console-session.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, sync } from '../envelope.ts';
import { param } from '../router.ts';
import { containerResources, instanceRoute } from '../instance-collection.ts';

const dimension = v.optional(
  v.pipe(
    v.number('expected an integer'),
    v.integer('expected an integer'),
    v.minValue(0, 'must not be negative'),
    v.maxValue(10_000, 'must be at most 10000'),
  ),
);
const ConsoleBody = v.object({ width: dimension, height: dimension });

/**
 * `/1.0/containers/<name>/console`. The log is LXC's `lxc.console.logfile` (rotated once at
 * 128 KiB, so 128 to 256 KiB of the latest output are kept), emptied at each start: while the
 * container runs it holds this run's console output, once stopped the last run's. POST attaches a
 * client to the live console.
 */
export function registerContainerConsoleRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, ops } = deps;
  const { console: host } = deps.containerHost;

  instanceRoute(app, '/:name/console', {
    GET: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      const log = await host.openLog(ct);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(log.size));
      // LXC may still be appending: serve the bytes there were when the files were opened.
      if (log.size === 0) {
        await log.close();
        return c.body(null, 200);
      }
      return c.body(Readable.toWeb(log.stream()) as ReadableStream);
    },
    DELETE: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      await host.clearLog(ct);
      return sync(c, {});
    },
    POST: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      await readJson(c, ConsoleBody);
      // width/height are validated but cannot be applied (400 unless it runs).
      const attach = await host.prepare(ct);
      let fds: Record<string, string> = {};
      const row = await ops.startTask(
        {
          class: 'websocket',
          description: 'Showing console',
          project: ct.project,
          resources: containerResources(c, ct),
        },
        async (ctx) => {
          const session = createConsoleSession({ open: attach, signal: ctx.signal });
          // Registered before the first await: the secrets exist when startTask returns.
          fds = ops.websockets.register(ctx.id, ['0', 'control'], session.onSocket);
          await ctx.setMetadata({ fds });
          await session.done;
        },
      );
      return async(c, { ...row, metadata: { ...row.metadata, fds } });
    },
  });
}
