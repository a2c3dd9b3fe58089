import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import {
  computeServerConfig,
  readServerConfig,
  renderServerConfig,
  writeServerConfig,
} from '../../desired/server-config.ts';
import { usedPoolDrivers } from '../../desired/runtime-reads.ts';
import { emitLifecycle } from '../../events/index.ts';
import { objectMap, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { createMemo } from '../memo.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import { API_EXTENSIONS } from '../extensions.ts';
import { route } from '../router.ts';

const ConfigBody = v.object({
  config: v.optional(objectMap(v.union([v.string(), v.number(), v.boolean()], 'expected a string value')), {}),
});

export const SERVER_VERSION = '0.1.0';

export function registerServerRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, node, host } = deps;

  // GET /1.0 is the hottest path: no query per request (1 s bound on what other members changed).
  const configMemo = createMemo(() => readServerConfig(db, node), 1_000);
  const driversMemo = createMemo(() => usedPoolDrivers(db), 1_000);

  async function describe(c: Context<AppEnv>) {
    const caller = c.get('caller');
    const base = {
      api_extensions: API_EXTENSIONS,
      api_status: 'stable',
      api_version: '1.0',
      auth: caller.level,
      public: false,
      auth_methods: ['tls'],
    };
    if (caller.level !== 'trusted') return { body: base, etag: undefined };
    const [stored, pools] = await Promise.all([configMemo.get(), driversMemo.get()]);
    const config = renderServerConfig(stored);
    const body = {
      ...base,
      config,
      environment: {
        addresses: deps.listeners.addresses(),
        architectures: host.architectures,
        certificate: deps.serverCertificate.cert,
        certificate_fingerprint: deps.serverCertificate.fingerprint,
        driver: 'lxc',
        driver_version: host.lxcVersion,
        firewall: 'nftables',
        kernel: host.kernel,
        kernel_architecture: host.kernelArchitecture,
        kernel_features: {},
        kernel_version: host.kernelVersion,
        lxc_features: {},
        os_name: host.osName,
        os_version: host.osVersion,
        project: c.get('project'),
        server: 'svcd',
        server_clustered: (await deps.cluster?.clustered()) ?? false,
        server_name: node,
        server_pid: process.pid,
        server_version: SERVER_VERSION,
        storage: pools
          .map((p) => p.driver)
          .sort()
          .join(' | '),
        storage_version: pools
          .map((p) => host.storageVersions[p.driver] ?? '')
          .sort()
          .join(' | '),
      },
    };
    return { body, etag: computeEtag(config), stored };
  }

  route(app, '/', { GET: { auth: 'guest', handler: (c) => sync(c, ['/1.0']) } });

  // One update at a time in this process (the HTTPS listener follows the config), and each write
  // conditional on the config it was computed from (other members share the cluster-wide keys).
  const updates = createKeyedMutex();
  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const req = await readJson(c, ConfigBody);
    await updates.run('config', () =>
      checkedWrite(
        c.req.header('if-match'),
        () => readServerConfig(db, node),
        (stored) => computeEtag(renderServerConfig(stored)),
        async (stored) => {
          const next = await computeServerConfig(stored, req.config, replace);
          // The listeners are changed first: an address that cannot be bound is refused and nothing is saved.
          const moves = [
            { key: 'core.https_address', set: deps.listeners.setHttpsAddress },
            { key: 'core.debug_address', set: deps.listeners.setDebugAddress },
          ].filter((l) => stored[l.key] !== next[l.key]);
          const moved: typeof moves = [];
          try {
            for (const l of moves) {
              await l.set(next[l.key]);
              moved.push(l);
            }
            await writeServerConfig(db, node, next, stored);
          } catch (e) {
            for (const l of moved) await l.set(stored[l.key]).catch(() => {});
            throw e;
          } finally {
            configMemo.invalidate();
          }
        },
      ),
    );
    emitLifecycle(deps.bus, { action: 'config-updated', source: '/1.0' });
    return sync(c, {});
  };

  route(app, '/1.0', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const { body, etag } = await describe(c);
        return sync(c, body, etag ? { etag } : {});
      },
    },
    PUT: update(true),
    PATCH: update(false),
  });

  route(app, '/1.0/resources', { GET: { auth: 'guest', handler: async (c) => sync(c, await deps.resources.get()) } });
}
