import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { readProject } from '../desired/projects.ts';
import { parseBool } from '../util/parse-bool.ts';
import { readServerKeys } from '../desired/server-config.ts';
import { identifyCaller } from './auth.ts';
import { discardUnreadBody } from './body.ts';
import type { AppEnv } from './context.ts';
import type { ApiDeps } from './deps.ts';
import { errorBody } from './envelope.ts';
import { HttpError, statusFor } from './errors.ts';
import { registerCertificateRoutes } from './routes/certificates.ts';
import { registerClusterRoutes } from './routes/cluster.ts';
import { registerContainerMoveRoutes } from './routes/container-move.ts';
import { createForwarder } from '../cluster/forward-request.ts';
import { registerContainerRoutes } from './routes/containers.ts';
import { registerContainerLogRoutes } from './routes/container-logs.ts';
import { registerContainerExecRoutes } from './routes/container-exec.ts';
import { registerContainerConsoleRoutes } from './routes/container-console.ts';
import { registerContainerMetadataRoutes } from './routes/container-metadata.ts';
import { registerContainerBackupRoutes } from './routes/container-backups.ts';
import { registerContainerFileRoutes } from './routes/container-files.ts';
import { registerImageRoutes } from './routes/images.ts';
import { registerNetworkRoutes } from './routes/networks.ts';
import { registerOperationRoutes } from './routes/operations.ts';
import { registerProfileRoutes } from './routes/profiles.ts';
import { registerProjectRoutes } from './routes/projects.ts';
import { registerServerRoutes } from './routes/server.ts';
import { registerStoragePoolRoutes } from './routes/storage-pools.ts';
import { registerStorageVolumeRoutes } from './routes/storage-volumes.ts';
import { registerUiRoutes } from '../ui/ui-routes.ts';
import { buildRoutingNow } from './build-routing.ts';
import { withUiSession } from '../ui/ui-caller.ts';

/** The hono app: one onError, one notFound, every route registered through `route()`. */
export function createApp(deps: ApiDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  let allowCredentials = false;
  const refreshCors = async () => {
    const keys = await readServerKeys(deps.db, deps.node, ['core.https_allowed_credentials']);
    allowCredentials = parseBool(keys['core.https_allowed_credentials']);
  };
  void refreshCors().catch(() => {});

  app.use(async (c, next) => {
    const requestId = randomUUID();
    const certCaller = await identifyCaller(c.env?.incoming, c.env?.listener, deps.trust);
    const caller = deps.ui
      ? await withUiSession(certCaller, (n) => c.req.header(n), deps.ui.sessions, 'request')
      : certCaller;
    c.set('requestId', requestId);
    c.set('caller', caller);
    c.set('log', deps.log.child({ requestId }));
    const project = c.req.query('project');
    if (project !== undefined && project !== '' && project !== 'default') {
      if (project.length > 64 || project.includes('\0')) throw new HttpError(404, 'Project not found');
      await readProject(deps.db, project);
      c.set('project', project);
    } else c.set('project', 'default');
    c.get('log').debug(
      { method: c.req.method, url: c.req.path, ip: caller.address ?? '@', protocol: caller.protocol },
      'Handling API request',
    );
    await next();
    if (allowCredentials && caller.protocol === 'tls') c.header('Access-Control-Allow-Credentials', 'true');
    if (c.req.method !== 'GET' && c.req.path === '/1.0') await refreshCors();
  });

  // A request about an object another member holds is carried out there, before any route reads the host.
  if (deps.cluster) app.use(createForwarder({ db: deps.db, node: deps.node, cluster: deps.cluster, log: deps.log }));
  registerServerRoutes(app, deps);
  registerCertificateRoutes(app, deps);
  registerClusterRoutes(app, deps);
  registerContainerMoveRoutes(app, deps);
  registerProfileRoutes(app, deps);
  registerProjectRoutes(app, deps);
  registerOperationRoutes(app, deps);
  registerStoragePoolRoutes(app, deps);
  registerStorageVolumeRoutes(app, deps);
  registerNetworkRoutes(app, deps);
  registerContainerRoutes(app, deps);
  registerContainerLogRoutes(app, deps);
  registerContainerExecRoutes(app, deps);
  registerContainerConsoleRoutes(app, deps);
  registerContainerMetadataRoutes(app, deps);
  registerContainerBackupRoutes(app, deps);
  registerContainerFileRoutes(app, deps);
  registerImageRoutes(app, deps);
  if (deps.ui) registerUiRoutes(app, { db: deps.db, node: deps.node, ops: deps.ops, ...deps.ui });

  // Errors can be answered before the request body was read: drop it first (see discardUnreadBody).
  const unreadBodyDropped = async (c: Context<AppEnv>) => {
    if (!(await discardUnreadBody(c))) c.header('Connection', 'close');
  };
  app.notFound(async (c) => {
    await unreadBodyDropped(c);
    return c.json(errorBody(404, 'not found'), 404);
  });
  app.onError(async (err, c) => {
    const { status, message, known } = statusFor(err);
    if (!known) (c.get('log') ?? deps.log).error({ err, method: c.req.method, url: c.req.path }, 'request failed');
    if (err instanceof HttpError) for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
    await unreadBodyDropped(c);
    return c.json(errorBody(status, message), status);
  });
  buildRoutingNow(app);
  return app;
}
