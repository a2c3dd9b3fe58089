import { randomUUID } from 'node:crypto';
import type { Hono } from 'hono';
import * as v from 'valibot';
import type { WebSocket } from 'ws';
import { expandStoredContainer, readContainer } from '../../desired/containers.ts';
import { readDataVersion } from '../../desired/data-versions.ts';
import { ValidationError } from '../../desired/errors.ts';
import { objectMap, readJson } from '../body.ts';
import { createVersionedReads } from '../../util/versioned-cache.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async } from '../envelope.ts';
import { bridgePipes, bridgePty, ExecSockets } from '../exec-session.ts';
import { param } from '../router.ts';
import { containerResources, instanceRoute, instanceUrl } from '../instance-collection.ts';

/** How long the command waits for its data websockets before the operation fails (nothing started). */
const CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const bool = v.optional(v.boolean('expected a boolean'), false);
/** A terminal dimension; 0 (what clients send for non-interactive) means the default. */
const dimension = v.optional(
  v.pipe(
    v.number('expected an integer'),
    v.integer('expected an integer'),
    v.minValue(0, 'must not be negative'),
    v.maxValue(65535, 'must be at most 65535'),
  ),
  0,
);
/** A uid or gid inside the container. */
const id = v.optional(
  v.pipe(
    v.number('expected an integer'),
    v.integer('expected an integer'),
    v.minValue(0, 'must not be negative'),
    v.maxValue(4294967294, 'must be below 4294967295'),
  ),
);

const ExecBody = v.object({
  command: v.pipe(
    v.array(v.string('expected a string'), 'expected a list of strings'),
    v.minLength(1, 'must not be empty'),
    v.check((c) => c[0] !== '', 'the program (first element) must not be empty'),
  ),
  environment: v.optional(
    v.pipe(
      objectMap(v.string('expected a string value')),
      v.check(
        (env) => Object.keys(env).every((k) => k !== '' && !k.includes('=')),
        'variable names must be non-empty and must not contain "="',
      ),
    ),
    {},
  ),
  'wait-for-websocket': bool,
  interactive: bool,
  'record-output': bool,
  width: dimension,
  height: dimension,
  user: id,
  group: id,
  cwd: v.optional(
    v.pipe(
      v.string('expected a string'),
      v.check((c) => c === '' || c.startsWith('/'), 'must be an absolute path'),
    ),
    '',
  ),
});
type ExecRequest = v.InferOutput<typeof ExecBody>;

/**
 * `POST /1.0/containers/<name>/exec`: run a command in a running container through lxc-attach.
 * With wait-for-websocket the command starts once its data websockets are connected and is
 * bridged to them (exec-session.ts); without, its stdio is the null device, or with record-output
 * its stdout/stderr go to `exec_<operation>.stdout|stderr` in the container's log directory (served
 * by the logs API). The operation ends with `return` = the exit status (128 + N when killed by signal N).
 */
export function registerContainerExecRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, ops } = deps;
  const { exec } = deps.containerHost;

  /**
   * The container by project and name with its `environment.*` config (expanded), kept until a container,
   * profile or project write changes them (data versions): an exec is a hot path.
   */
  const targets = createVersionedReads(
    () => readDataVersion(db, ['containers', 'profiles', 'projects']),
    async (key: string) => {
      const [project, name] = key.split('\0') as [string, string];
      const ct = await readContainer(db, project, name);
      const { config } = await expandStoredContainer(db, ct);
      const env = Object.fromEntries(
        Object.entries(config)
          .filter(([k]) => k.startsWith('environment.'))
          .map(([k, val]) => [k.slice('environment.'.length), val]),
      );
      return { ct, env };
    },
    256,
  );

  /** The command's environment, as LXD builds it: defaults, then the container's `environment.*`, then the request's. */
  function environmentOf(fromConfig: Record<string, string>, body: ExecRequest): Record<string, string> {
    const root = (body.user ?? 0) === 0;
    return {
      PATH: DEFAULT_PATH,
      ...(root ? { HOME: '/root', USER: 'root' } : {}),
      LANG: 'C.UTF-8',
      ...fromConfig,
      ...body.environment,
    };
  }

  instanceRoute(app, '/:name/exec', {
    POST: async (c) => {
      const { ct, env } = await targets.get(`${c.get('project')}\0${param(c, 'name')}`);
      const body = await readJson(c, ExecBody);
      const waitForWebsocket = body['wait-for-websocket'];
      if (body['record-output'] && waitForWebsocket)
        throw new ValidationError('"record-output" is only valid with "wait-for-websocket" false');
      const prepared = await exec.prepare(ct, {
        command: body.command,
        env: environmentOf(env, body),
        uid: body.user,
        gid: body.group,
        cwd: body.cwd,
      });
      const opId = randomUUID();
      const base = {
        id: opId,
        description: 'Executing command',
        project: ct.project,
        resources: containerResources(c, ct),
      };
      const log = (msg: string) => c.get('log').debug({ op: opId }, msg);

      if (waitForWebsocket) {
        const interactive = body.interactive;
        const sockets = new ExecSockets(interactive ? ['0'] : ['0', '1', '2']);
        const fds = ops.websockets.register(
          opId,
          interactive ? ['0', 'control'] : ['0', '1', '2', 'control'],
          (fd, ws) => sockets.attach(fd, ws as WebSocket),
        );
        try {
          // Answered before its row is written (a short command's row is written with its end).
          const operation = await ops.startTask(
            { ...base, class: 'websocket', metadata: { fds } },
            async ({ signal }) => {
              try {
                await sockets.waitForData(CONNECT_TIMEOUT_MS, signal);
                const size = { cols: body.width || 80, rows: body.height || 24 };
                // The bridges kill the command if the signal aborts (a cancel, or a failed write of the row).
                const status = interactive
                  ? await bridgePty(sockets, await prepared.pty(size), { log, signal })
                  : await bridgePipes(sockets, await prepared.piped(), { log, signal });
                return { return: status };
              } catch (e) {
                // No socket outlives the operation (the client learns the failure from it).
                sockets.closeAll();
                throw e;
              }
            },
            { deferInsert: true },
          );
          return async(c, operation);
        } catch (e) {
          ops.websockets.revoke(opId);
          throw e;
        }
      }

      const base1 = `exec_${opId}`;
      const logUrl = (suffix: string) => {
        const [p, q] = instanceUrl(c, ct).split('?');
        return `${p}/logs/${base1}.${suffix}${q ? `?${q}` : ''}`;
      };
      const output = body['record-output'] ? { '1': logUrl('stdout'), '2': logUrl('stderr') } : undefined;
      const operation = await ops.startTask(
        { ...base, class: 'task', ...(output ? { metadata: { output } } : {}) },
        async ({ signal }) => {
          const proc = await prepared.detached(output ? base1 : undefined);
          const stop = () => void proc.signal(9);
          // Without output files the operation is answered at once and written with its end (deferInsert).
          if (signal.aborted) stop();
          else signal.addEventListener('abort', stop, { once: true });
          try {
            return { return: await proc.status };
          } finally {
            signal.removeEventListener('abort', stop);
          }
        },
        { deferInsert: !output },
      );
      return async(c, operation);
    },
  });
}
