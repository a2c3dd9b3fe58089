import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, type ApiClient } from './api-client.ts';
import { computePlan } from './compute-plan.ts';
import type { HostDoc } from './document.ts';
import { executePlan } from './execute-plan.ts';
import type { HostState } from './host-state.ts';

/** An API that records each write (`METHOD path [action]`) and can refuse one. */
function recorder(refuse: (line: string) => boolean = () => false) {
  const calls: string[] = [];
  const api: ApiClient = {
    request: async () => ({ status: 200, json: undefined }),
    get: async () => undefined,
    async write(method, path, body) {
      const action = (body as { action?: string; force?: boolean } | undefined)?.action;
      const line = `${method} ${path}${action ? ` ${action}${(body as { force?: boolean }).force ? ' force' : ''}` : ''}`;
      calls.push(line);
      if (refuse(line)) throw new ApiError(400, `${method} ${path}: refused`);
      return undefined;
    },
    close: () => {},
  };
  return { api, calls };
}

const host = (): HostState => ({
  server: 'lxd',
  config: {},
  projects: [
    { name: 'default', config: {} },
    { name: 'old', config: {} },
  ],
  storage_pools: [{ name: 'default', driver: 'dir', config: {} }],
  networks: [{ name: 'gone', type: 'bridge', managed: true, config: {} }],
  storage_volumes: [{ pool: 'default', name: 'stale', config: {} }],
  profiles: [
    { name: 'default', config: {}, devices: {} },
    { name: 'unused', config: {}, devices: {} },
  ],
  containers: [
    { name: 'up', status: 'Running', profiles: ['default'], config: {}, devices: {} },
    { name: 'old', status: 'Running', profiles: ['default'], config: {}, devices: {} },
    { name: 'ice', status: 'Frozen', profiles: ['default'], config: {}, devices: {} },
  ],
  images: { fingerprints: [], aliases: [] },
});

const doc: HostDoc = {
  config: { 'images.remote_cache_expiry': '3' },
  projects: [
    { name: 'default', config: {} },
    { name: 'p1', config: {} },
  ],
  storage_pools: [
    { name: 'default', driver: 'dir', config: {} },
    { name: 'fast', driver: 'btrfs', config: {} },
  ],
  networks: [{ name: 'br1', config: {} }],
  storage_volumes: [{ pool: 'fast', name: 'v1', config: {} }],
  profiles: [
    { name: 'default', config: {}, devices: {} },
    { name: 'web', config: {}, devices: {} },
  ],
  containers: [
    { name: 'new', source: { type: 'image', alias: 'bb' } },
    { name: 'cold', source: { type: 'image', alias: 'bb' }, state: 'stopped' },
    { name: 'up', config: {}, devices: {}, state: 'stopped' },
    { name: 'ice', config: { 'user.a': 'b' }, devices: {} },
  ],
};

test('writes in dependency order, containers powered as asked, deletes in reverse order after a forced stop', async () => {
  const { api, calls } = recorder();
  await executePlan(api, computePlan(doc, host(), { mode: 'apply', prune: true }), { parallel: 1 });
  assert.deepEqual(calls, [
    'PATCH /1.0',
    'POST /1.0/projects',
    'POST /1.0/storage-pools',
    'POST /1.0/networks',
    'POST /1.0/storage-pools/fast/volumes/custom',
    'POST /1.0/profiles',
    'POST /1.0/containers',
    'PUT /1.0/containers/new/state start',
    'POST /1.0/containers',
    'PUT /1.0/containers/up/state stop',
    'PUT /1.0/containers/ice',
    'PUT /1.0/containers/ice/state unfreeze',
    'PUT /1.0/containers/old/state stop force',
    'DELETE /1.0/containers/old',
    'DELETE /1.0/profiles/unused',
    'DELETE /1.0/storage-pools/default/volumes/custom/stale',
    'DELETE /1.0/networks/gone',
    'DELETE /1.0/projects/old',
  ]);
});

test('a stop that fails cleanly is forced; the first failure stops the rest and names the object', async () => {
  const { api, calls } = recorder((l) => l === 'PUT /1.0/containers/up/state stop' || l === 'POST /1.0/profiles');
  await assert.rejects(
    executePlan(api, computePlan(doc, host(), { mode: 'apply', prune: true }), { parallel: 1 }),
    /^Error: profile "web": POST \/1.0\/profiles: refused$/,
  );
  assert.equal(calls.at(-1), 'POST /1.0/profiles', 'nothing after the failed kind');
  const stop = computePlan({ containers: [{ name: 'up', state: 'stopped' }] }, host(), { mode: 'apply', prune: false });
  const r = recorder((l) => l === 'PUT /1.0/containers/up/state stop');
  await executePlan(r.api, stop, { parallel: 1 });
  assert.deepEqual(r.calls, ['PUT /1.0/containers/up/state stop', 'PUT /1.0/containers/up/state stop force']);
});
