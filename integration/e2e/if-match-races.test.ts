/**
 * If-Match under concurrency, against the daemon as a process: for every resource that honours
 * If-Match, 20 concurrent PUTs or PATCHes carrying the same ETag and different values give exactly one
 * 2xx and 19 × 412 in the error envelope, and the object then carries the winner's value; repeated for
 * several rounds (a lost update showed up in about a quarter of them). Container PUT is async: its 412s
 * come back synchronously, without an operation. PATCHes without If-Match stay last-writer-wins but
 * lose no field: 20 concurrent PATCHes each adding one key leave all 20 keys.
 * Runs on the embedded PGlite and, when SVCD_TEST_PG_URL is set (scripts/test.sh), the core resources
 * again on a throw-away PostgreSQL database (real concurrent transactions). `after` deletes what the
 * rounds made, stops the daemons and drops the database, on failure too.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeClientCertificate } from '../support/certs.ts';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client, type Reply } from '../support/http.ts';
import { subscribeEvents } from '../support/events.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

const ROUNDS = 8;
const WRITERS = 20;

const lxcSkip = await lxcSkipReason();
if (lxcSkip) console.log(`# skipping the If-Match races: ${lxcSkip}`);
const pgSkip = adminUrl ? undefined : 'SVCD_TEST_PG_URL is not set (scripts/test.sh starts PostgreSQL 15 and sets it)';
if (!lxcSkip && pgSkip) console.log(`# skipping the If-Match races on PostgreSQL: ${pgSkip}`);

type Meta = Record<string, any>;

interface RaceCase {
  name: string;
  /** Also run on PostgreSQL. */
  core: boolean;
  path: string;
  method: 'PUT' | 'PATCH';
  /** The status of the one write that wins. */
  ok: 200 | 202;
  /** Request body of writer `i`, from the object as read (GET) at the start of the round. */
  body: (i: number, cur: Meta, round: number) => unknown;
  /** What writer `i` sets, and where it is read back from the object. */
  sets: (i: number, cur: Meta, round: number) => unknown;
  read: (obj: Meta) => unknown;
}

const desc = (prefix: string) => (i: number, _cur: Meta, round: number) => `${prefix} r${round} w${i}`;
const COMPRESSIONS = ['none', 'gzip', 'xz', 'bzip2', 'zstd', 'lzma'];
/** Server config values: each round's writers set values other than the current one. */
const compression = (i: number, cur: Meta) => {
  const others = COMPRESSIONS.filter((c) => c !== (cur.config?.['images.compression_algorithm'] ?? 'gzip'));
  return others[i % others.length]!;
};

function raceCases(names: {
  container: string;
  profile: string;
  project: string;
  volume: string;
  alias: string;
  cert: string;
  fingerprint: string;
}): RaceCase[] {
  const ct = `/1.0/containers/${names.container}`;
  const editableCt = (cur: Meta) => ({
    architecture: cur.architecture,
    config: cur.config,
    devices: cur.devices,
    ephemeral: cur.ephemeral,
    profiles: cur.profiles,
    description: cur.description,
  });
  const byDescription = (
    name: string,
    core: boolean,
    p: string,
    method: 'PUT' | 'PATCH',
    put: (cur: Meta) => Meta = () => ({}),
    ok: 200 | 202 = 200,
  ): RaceCase => ({
    name,
    core,
    path: p,
    method,
    ok,
    body: (i, cur, round) => ({ ...(method === 'PUT' ? put(cur) : {}), description: desc(name)(i, cur, round) }),
    sets: desc(name),
    read: (o) => o.description,
  });
  return [
    {
      name: 'server config PUT /1.0',
      core: true,
      path: '/1.0',
      method: 'PUT',
      ok: 200,
      body: (i, cur) => ({ config: { ...cur.config, 'images.compression_algorithm': compression(i, cur) } }),
      sets: (i, cur) => compression(i, cur),
      read: (o) => o.config['images.compression_algorithm'],
    },
    {
      name: 'server config PATCH /1.0',
      core: true,
      path: '/1.0',
      method: 'PATCH',
      ok: 200,
      body: (i, cur) => ({ config: { 'images.compression_algorithm': compression(i, cur) } }),
      sets: (i, cur) => compression(i, cur),
      read: (o) => o.config['images.compression_algorithm'],
    },
    {
      name: 'certificate PUT',
      core: false,
      path: `/1.0/certificates/${names.cert}`,
      method: 'PUT',
      ok: 200,
      body: (i, _cur, round) => ({ type: 'client', name: `cert-r${round}-w${i}` }),
      sets: (i, _cur, round) => `cert-r${round}-w${i}`,
      read: (o) => o.name,
    },
    {
      name: 'certificate PATCH',
      core: false,
      path: `/1.0/certificates/${names.cert}`,
      method: 'PATCH',
      ok: 200,
      body: (i, _cur, round) => ({ name: `cert-p-r${round}-w${i}` }),
      sets: (i, _cur, round) => `cert-p-r${round}-w${i}`,
      read: (o) => o.name,
    },
    byDescription('container PUT', true, ct, 'PUT', editableCt, 202),
    byDescription('container PATCH', true, ct, 'PATCH'),
    {
      name: 'container metadata PUT',
      core: false,
      path: `${ct}/metadata`,
      method: 'PUT',
      ok: 200,
      body: (i, cur, round) => ({ ...cur, properties: { ...cur.properties, race: `r${round} w${i}` } }),
      sets: (i, _cur, round) => `r${round} w${i}`,
      read: (o) => o.properties?.race,
    },
    {
      name: 'image PUT',
      core: true,
      path: `/1.0/images/${names.fingerprint}`,
      method: 'PUT',
      ok: 200,
      body: (i, cur, round) => ({
        public: cur.public,
        auto_update: cur.auto_update,
        properties: { ...cur.properties, race: `r${round} w${i}` },
      }),
      sets: (i, _cur, round) => `r${round} w${i}`,
      read: (o) => o.properties.race,
    },
    {
      name: 'image PATCH',
      core: false,
      path: `/1.0/images/${names.fingerprint}`,
      method: 'PATCH',
      ok: 200,
      body: (i, _cur, round) => ({ properties: { race: `p r${round} w${i}` } }),
      sets: (i, _cur, round) => `p r${round} w${i}`,
      read: (o) => o.properties.race,
    },
    byDescription('image alias PUT', false, `/1.0/images/aliases/${names.alias}`, 'PUT', (cur) => ({
      target: cur.target,
    })),
    byDescription('image alias PATCH', false, `/1.0/images/aliases/${names.alias}`, 'PATCH'),
    byDescription('profile PUT', true, `/1.0/profiles/${names.profile}`, 'PUT', (cur) => ({
      config: cur.config,
      devices: cur.devices,
    })),
    byDescription('profile PATCH', false, `/1.0/profiles/${names.profile}`, 'PATCH'),
    byDescription('project PUT', false, `/1.0/projects/${names.project}`, 'PUT', (cur) => ({ config: cur.config })),
    byDescription('project PATCH', true, `/1.0/projects/${names.project}`, 'PATCH'),
    byDescription('storage pool PUT', false, '/1.0/storage-pools/default', 'PUT', (cur) => ({ config: cur.config })),
    byDescription('storage pool PATCH', true, '/1.0/storage-pools/default', 'PATCH'),
    byDescription(
      'custom volume PUT',
      false,
      `/1.0/storage-pools/default/volumes/custom/${names.volume}`,
      'PUT',
      (cur) => ({ config: cur.config }),
    ),
    byDescription('custom volume PATCH', true, `/1.0/storage-pools/default/volumes/custom/${names.volume}`, 'PATCH'),
  ];
}

/** Objects with a map a PATCH merges into: 20 concurrent PATCHes without If-Match, one key each. */
function mergeCases(names: {
  container: string;
  profile: string;
  project: string;
  volume: string;
  fingerprint: string;
}) {
  return [
    { name: 'container', path: `/1.0/containers/${names.container}`, field: 'config' },
    { name: 'profile', path: `/1.0/profiles/${names.profile}`, field: 'config' },
    { name: 'project', path: `/1.0/projects/${names.project}`, field: 'config' },
    { name: 'image', path: `/1.0/images/${names.fingerprint}`, field: 'properties' },
    { name: 'storage pool', path: '/1.0/storage-pools/default', field: 'config' },
    { name: 'custom volume', path: `/1.0/storage-pools/default/volumes/custom/${names.volume}`, field: 'config' },
  ];
}

/**
 * `bodies.length` requests at once. With `split`, every request's headers go first and all bodies
 * 30 ms later, as a client whose body comes in a later packet: each handler has started (and may have
 * read the object) before any body is there, the interleaving that lost updates.
 */
async function burst(
  socketPath: string,
  method: string,
  p: string,
  bodies: unknown[],
  headers: Record<string, string>,
  split: boolean,
): Promise<Reply[]> {
  const reqs = bodies.map((b) => {
    const payload = Buffer.from(JSON.stringify(b));
    let req!: http.ClientRequest;
    const reply = new Promise<Reply>((resolve, reject) => {
      req = http.request(
        {
          socketPath,
          method,
          path: p,
          headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(payload.length) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        },
      );
      req.on('error', reject);
    });
    return { req, payload, reply };
  });
  if (split) {
    for (const r of reqs) r.req.flushHeaders();
    await new Promise((r) => setTimeout(r, 30));
  }
  for (const r of reqs) r.req.end(r.payload);
  return Promise.all(reqs.map((r) => r.reply));
}

const etagOf = (res: Reply) => {
  assert.equal(res.status, 200, res.text);
  const tag = res.headers.etag;
  assert.ok(typeof tag === 'string' && tag.length > 2, `an ETag on GET, got ${String(tag)}`);
  return tag;
};

function suite(label: string, opts: { pg: boolean; skip: string | undefined }) {
  describe(`If-Match races (${label})`, { skip: opts.skip }, () => {
    let d: Daemon | undefined;
    let api: Client | undefined;
    let work = '';
    let dropDb: (() => Promise<void>) | undefined;
    const tag = `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`;
    const names = {
      container: `race-c-${tag}`,
      profile: `race-p-${tag}`,
      project: `race-j-${tag}`,
      volume: `race-v-${tag}`,
      alias: `race-a-${tag}`,
      cert: '',
      fingerprint: '',
    };

    before(async () => {
      await ensureRootSubids();
      work = await mkdtemp(path.join(os.tmpdir(), 'svcd-race-'));
      let databaseUrl: string | undefined;
      if (opts.pg) {
        const db = await createTestDatabase();
        databaseUrl = db.url;
        dropDb = db.drop;
      }
      d = await startDaemon({ ...(databaseUrl ? { databaseUrl } : {}), env: { SVCD_LOG_LEVEL: 'warn' } });
      api = client({ socketPath: d.socketPath });
      names.fingerprint = (await uploadBusybox(api, work)).fingerprint;
      const made = await Promise.all([
        api.post('/1.0/profiles', { name: names.profile, description: 'p' }),
        api.post('/1.0/projects', { name: names.project, description: 'j' }),
        api.post('/1.0/storage-pools/default/volumes/custom', { name: names.volume }),
        api.post('/1.0/images/aliases', { name: names.alias, target: names.fingerprint }),
        api.post('/1.0/certificates', {
          type: 'client',
          name: 'race',
          certificate: (await makeClientCertificate()).cert,
        }),
      ]);
      for (const r of made) assert.equal(r.status, 200, r.text);
      names.cert = (await api.get('/1.0/certificates')).json.metadata[0].split('/').pop();
      await waitOp(
        api,
        await api.post('/1.0/containers', { name: names.container, source: { type: 'image', alias: 'bb' } }),
      );
    });

    after(async () => {
      if (api) {
        await api.delete(`/1.0/images/aliases/${names.alias}`).catch(() => {});
        await api.delete(`/1.0/storage-pools/default/volumes/custom/${names.volume}`).catch(() => {});
        await api.delete(`/1.0/profiles/${names.profile}`).catch(() => {});
        await api.delete(`/1.0/projects/${names.project}`).catch(() => {});
      }
      await teardownContainers(d, api, [work]);
      await dropDb?.();
    });

    for (const [n, { name, core }] of raceCases(names).entries()) {
      if (opts.pg && !core) continue;
      test(`${name}: ${WRITERS} concurrent writes with the same If-Match → one 2xx, the rest 412, the winner's value stays (${ROUNDS} rounds)`, async () => {
        const rc = raceCases(names)[n]!;
        for (let round = 1; round <= ROUNDS; round++) {
          const res0 = await api!.get(rc.path);
          const etag = etagOf(res0);
          const cur: Meta = res0.json.metadata;
          const bodies = Array.from({ length: WRITERS }, (_, i) => rc.body(i, cur, round));
          const replies = await burst(d!.socketPath, rc.method, rc.path, bodies, { 'If-Match': etag }, round % 2 === 1);
          const winners = replies.flatMap((r, i) => (r.status >= 200 && r.status < 300 ? [i] : []));
          assert.equal(
            winners.length,
            1,
            `round ${round}: exactly one write wins, got ${winners.length}: ${replies.map((r) => r.status).join(' ')}`,
          );
          const w = winners[0]!;
          assert.equal(replies[w]!.status, rc.ok, replies[w]!.text);
          for (const [i, r] of replies.entries()) if (i !== w) expectError(r, 412);
          if (rc.ok === 202) await waitOp(api!, replies[w]!);
          const now = (await api!.get(rc.path)).json.metadata;
          assert.deepEqual(
            rc.read(now),
            rc.sets(w, cur, round),
            `round ${round}: the object carries the winner's value`,
          );
        }
      });
    }

    test("container PUT: the losers' 412 is synchronous, no operation is made for them", async () => {
      const p = `/1.0/containers/${names.container}`;
      const res0 = await api!.get(p);
      const etag = etagOf(res0);
      const cur = res0.json.metadata;
      const sub = await subscribeEvents(d!.socketPath, '?type=operation');
      try {
        const body = (i: number) => ({
          architecture: cur.architecture,
          config: cur.config,
          devices: cur.devices,
          ephemeral: cur.ephemeral,
          profiles: cur.profiles,
          description: `sync ${i}`,
        });
        const replies = await burst(
          d!.socketPath,
          'PUT',
          p,
          Array.from({ length: WRITERS }, (_, i) => body(i)),
          { 'If-Match': etag },
          true,
        );
        const won = replies.filter((r) => r.status === 202);
        assert.equal(won.length, 1, replies.map((r) => r.status).join(' '));
        for (const r of replies) if (r.status !== 202) expectError(r, 412);
        const done = await waitOp(api!, won[0]!);
        assert.equal(done.id, won[0]!.json.metadata.id);
        // The operation events seen: only the winner's operation was ever made.
        await eventually(
          () => sub.events.some((e) => e.metadata?.id === done.id && e.metadata?.status === 'Success'),
          "the winner's final operation event",
        );
        const made = new Set(
          sub.events.filter((e) => e.metadata?.description === 'Updating container').map((e) => e.metadata.id),
        );
        assert.deepEqual([...made], [done.id]);
      } finally {
        sub.close();
      }
    });

    for (const [n, { name }] of mergeCases(names).entries()) {
      test(`${name}: ${WRITERS} concurrent PATCHes without If-Match, each adding a key → none is lost (${ROUNDS} rounds)`, async () => {
        const mc = mergeCases(names)[n]!;
        for (let round = 1; round <= ROUNDS; round++) {
          const key = (i: number) => `user.merge-r${round}-w${i}`;
          const bodies = Array.from({ length: WRITERS }, (_, i) => ({ [mc.field]: { [key(i)]: `v${i}` } }));
          const replies = await burst(d!.socketPath, 'PATCH', mc.path, bodies, {}, round % 2 === 1);
          for (const r of replies) assert.equal(r.status, 200, r.text);
          const now = (await api!.get(mc.path)).json.metadata[mc.field];
          const lost = Array.from({ length: WRITERS }, (_, i) => key(i)).filter((k) => now[k] === undefined);
          assert.deepEqual(lost, [], `round ${round}: every writer's key is kept`);
        }
      });
    }
  });
}

suite('PGlite', { pg: false, skip: lxcSkip });
suite('PostgreSQL', { pg: true, skip: lxcSkip ?? pgSkip });
