import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkReferences } from './check-references.ts';
import { computePlan } from './compute-plan.ts';
import type { HostDoc } from './document.ts';
import type { HostState } from './host-state.ts';

const host = (server = 'svcd'): HostState => ({
  server,
  config: {},
  projects: [{ name: 'default', config: {} }],
  storage_pools: [{ name: 'default', driver: 'dir', config: {} }],
  networks: [{ name: 'eth9', type: 'physical', managed: false, config: {} }],
  storage_volumes: [],
  profiles: [
    { name: 'default', config: {}, devices: { root: { type: 'disk', path: '/', pool: 'default' } } },
    { name: 'bare', config: {}, devices: {} },
  ],
  containers: [],
  images: { fingerprints: ['abcdef0123', 'abcdef9999'], aliases: ['bb'] },
});

const check = (doc: HostDoc, h = host(), prune = false) =>
  checkReferences(doc, h, computePlan(doc, h, { mode: 'apply', prune }));
const img = { type: 'image', alias: 'bb' };

test('references made by the document or present on the server pass', () => {
  check({
    networks: [{ name: 'br1', config: {} }],
    storage_volumes: [{ pool: 'default', name: 'v1', config: {} }],
    profiles: [
      {
        name: 'web',
        devices: { eth0: { type: 'nic', network: 'br1' }, lan: { type: 'nic', nictype: 'bridged', parent: 'eth9' } },
      },
    ],
    containers: [
      {
        name: 'c1',
        source: img,
        profiles: ['default', 'web'],
        devices: { d: { type: 'disk', pool: 'default', source: 'v1', path: '/d' } },
      },
      { name: 'c2', source: { type: 'image', fingerprint: 'abcdef0' } },
    ],
  });
});

test('each missing reference is refused naming the object and key, before any write', () => {
  const bad = (doc: HostDoc, re: RegExp, h = host(), prune = false) => assert.throws(() => check(doc, h, prune), re);
  bad(
    { containers: [{ name: 'c1', source: { type: 'image', alias: 'nope' } }] },
    /container "c1": key "source.alias": no image alias "nope"/,
  );
  bad(
    { containers: [{ name: 'c1', source: { type: 'image', fingerprint: 'abcdef' } }] },
    /key "source.fingerprint": more than one image matches/,
  );
  bad(
    { containers: [{ name: 'c1', source: img, profiles: ['gone'] }] },
    /container "c1": key "profiles": no profile "gone"/,
  );
  bad({ containers: [{ name: 'c1', source: img, profiles: ['bare'] }] }, /container "c1": key "devices": no root disk/);
  bad({ storage_volumes: [{ pool: 'p2', name: 'v' }] }, /storage volume "p2\/v": key "pool": no pool "p2"/);
  bad(
    { profiles: [{ name: 'p', devices: { eth0: { type: 'nic', network: 'eth9' } } }] },
    /profile "p": device "eth0": key "network": no managed network "eth9"/,
  );
  bad(
    { profiles: [{ name: 'p', devices: { d: { type: 'disk', pool: 'default', source: 'v9', path: '/d' } } }] },
    /device "d": key "source": no custom volume "v9" in pool "default"/,
  );
  // With prune, a profile the document does not name is deleted: a container may not keep using it.
  bad(
    { containers: [{ name: 'c1', source: img, profiles: ['default', 'bare'] }] },
    /no profile "bare" \(the plan deletes it\)/,
    host(),
    true,
  );
  // svcd's own validators, as the server would run them.
  bad(
    { containers: [{ name: 'c1', source: img, config: { 'limits.memory': 'lots' } }] },
    /container "c1": Invalid value for instance config key "limits.memory"/,
  );
  bad(
    { containers: [{ name: 'c1', source: img, devices: { x: { type: 'disk', path: 'rel', source: '/srv' } } }] },
    /container "c1": Device "x" \(disk\): invalid "path"/,
  );
  bad(
    { profiles: [{ name: 'p', config: { 'limits.cpus': '1' } }] },
    /profile "p": Unknown instance config key "limits.cpus"/,
  );
});

test("svcd's own validators run only against svcd", () => {
  check({ containers: [{ name: 'c1', source: img, config: { 'limits.memory': 'lots' } }] }, host('lxd'));
});
