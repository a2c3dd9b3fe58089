import path from 'node:path';
import { Readable } from 'node:stream';
import { createReadStream } from 'node:fs';
import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { containerUrl, readContainer } from '../../desired/containers.ts';
import { ValidationError } from '../../desired/errors.ts';
import { attachConsole } from '../../host/lxc/console.ts';
import { containerState } from '../../host/lxc/lifecycle.ts';
import { openLogFile, removeLogFile, truncateLogFile } from '../../host/log-files.ts';
import { readJson } from '../body.ts';
import { createConsoleSession } from '../console-session.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, sync } from '../envelope.ts';
import { param, route } from '../router.ts';
import { logDirOf, lxcPathOf } from '../../host/layout.ts';

const dimension = v.optional(v.pipe(v.number('expected an integer'), v.integer('expected an integer'), v.minValue(0, 'must not be negative'), v.maxValue(10_000, 'must be at most 10000')));
const ConsoleBody = v.object({ width: dimension, height: dimension });

/** LXC's console log (lxc.console.logfile) and the part it rotated away when the log was full. */
const CONSOLE_LOG = 'console.log';
const ROTATED_CONSOLE_LOG = 'console.log.1';
const CONSOLE_LOG_PARTS = [ROTATED_CONSOLE_LOG, CONSOLE_LOG];

/**
 * `/1.0/containers/<name>/console`. The log is LXC's `lxc.console.logfile` (rotated once at
 * 128 KiB, so 128 to 256 KiB of the latest output are kept), emptied at each start: while the
 * container runs it holds this run's console output, once stopped the last run's. POST attaches a
 * client to the live console.
 */
export function registerContainerConsoleRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, ops } = deps;
  const logFile = (c: Context<AppEnv>, name: string) => {
    const dir = logDirOf(deps.stateDir, { project: c.get('project'), name });
    return { root: path.dirname(dir), sub: path.basename(dir) };
  };

  route(app, '/1.0/containers/:name/console', {
    GET: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      const { root, sub } = logFile(c, ct.name);
      // The rotated part (older output) first, then the current file; absent parts (never started) are empty.
      const parts = (await Promise.all(CONSOLE_LOG_PARTS.map((f) => openLogFile(root, sub, f)))).filter((p) => p !== undefined);
      const size = parts.reduce((n, p) => n + p.size, 0);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(size));
      // LXC may still be appending: serve the bytes there were when the files were opened.
      async function* bytes() {
        try {
          for (const { fh, size: n } of parts) if (n > 0) yield* createReadStream('', { fd: fh, start: 0, end: n - 1, autoClose: false });
        } finally {
          await Promise.all(parts.map((p) => p.fh.close().catch(() => {})));
        }
      }
      if (size === 0) {
        await Promise.all(parts.map((p) => p.fh.close()));
        return c.body(null, 200);
      }
      return c.body(Readable.toWeb(Readable.from(bytes())) as ReadableStream);
    },
    DELETE: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      const { root, sub } = logFile(c, ct.name);
      await removeLogFile(root, sub, ROTATED_CONSOLE_LOG);
      await truncateLogFile(root, sub, CONSOLE_LOG);
      return sync(c, {});
    },
    POST: async (c) => {
      const ct = await readContainer(db, c.get('project'), param(c, 'name'));
      await readJson(c, ConsoleBody);
      const ref = { name: ct.id, lxcPath: lxcPathOf(deps.stateDir) };
      const { state } = await containerState(ref);
      if (state !== 'RUNNING' && state !== 'FROZEN') throw new ValidationError(`Container "${ct.name}" is not running`);
      // width/height are validated but cannot be applied (see host/lxc/console.ts).
      let fds: Record<string, string> = {};
      const row = await ops.startTask(
        { class: 'websocket', description: 'Showing console', project: ct.project, resources: { containers: [containerUrl(ct)] } },
        async (ctx) => {
          const session = createConsoleSession({ open: () => attachConsole(ref, path.join(logDirOf(deps.stateDir, ct), 'lxc.log')), signal: ctx.signal });
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
