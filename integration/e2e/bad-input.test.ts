import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { makeClientCertificate } from '../support/certs.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { freePort, client, type Client, type Reply, type Target } from '../support/http.ts';

/**
 * Every write endpoint of the server, profile, project and certificate APIs is walked with bad
 * input: malformed JSON, non-object bodies, wrong types, unknown config keys, bad devices,
 * oversized bodies (declared and chunked), bad names and odd paths. Each answer must be the
 * spec's error envelope with the right status, nothing may be half-written, and the daemon
 * must stay up.
 */

const fp = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');

type Status = 400 | 403 | 404 | 409 | 412;

interface Case {
  what: string;
  method: string;
  path: string;
  /** A string or Buffer is sent as is; anything else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Send the body with chunked transfer encoding (no Content-Length). */
  chunked?: boolean;
  /** Send it on the shared keep-alive connection (else a fresh one with `Connection: close`). */
  reuse?: boolean;
  status: Status;
  /** The error message must match (for type errors: it names the field). */
  mentions?: RegExp;
  /** Wrong method: the `Allow` header must list exactly these methods. */
  allow?: string;
}

/** The spec's error envelope: type error, error_code = HTTP status, a message, a metadata object. */
function envelopeProblem(res: Reply, c: Case): string | undefined {
  const j = res.json;
  if (res.status !== c.status) return `status ${res.status}, expected ${c.status}: ${res.text.slice(0, 200)}`;
  if (!j || typeof j !== 'object') return `not a JSON body: ${res.text.slice(0, 200)}`;
  if (j.type !== 'error') return `type ${JSON.stringify(j.type)}`;
  if (j.error_code !== c.status) return `error_code ${j.error_code}`;
  if (typeof j.error !== 'string' || j.error === '') return `error ${JSON.stringify(j.error)}`;
  if (!j.metadata || typeof j.metadata !== 'object' || Array.isArray(j.metadata))
    return `metadata ${JSON.stringify(j.metadata)}`;
  if (!/json/.test(res.headers['content-type'] ?? '')) return `content-type ${res.headers['content-type']}`;
  if (c.mentions && !c.mentions.test(j.error)) return `message ${JSON.stringify(j.error)} does not match ${c.mentions}`;
  if (c.allow !== undefined && res.headers.allow !== c.allow)
    return `Allow ${JSON.stringify(res.headers.allow)}, expected ${JSON.stringify(c.allow)}`;
  return undefined;
}

/**
 * Oversized bodies go out both ways clients send them: on a fresh connection with
 * `Connection: close`, and on one shared keep-alive connection (as LXD's Go client and
 * python-requests do), which must stay usable for the next request after a refusal.
 */
const keepAlive = {
  http: new http.Agent({ keepAlive: true, maxSockets: 1 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 1 }),
};

/** Send a Buffer body, with Content-Length or chunked (64 KiB pieces, no Content-Length); stop sending once answered. */
function sendBuffer(
  target: Target,
  method: string,
  path: string,
  payload: Buffer,
  opts: { chunked?: boolean | undefined; reuse?: boolean | undefined },
  headers: Record<string, string> = {},
): Promise<Reply> {
  const chunked = opts.chunked ?? false;
  return new Promise((resolve, reject) => {
    let done = false;
    const options: https.RequestOptions = {
      method,
      path,
      headers: {
        'Content-Type': 'application/json',
        ...(chunked ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': String(payload.length) }),
        ...headers,
      },
      ...(target.socketPath
        ? { socketPath: target.socketPath, agent: opts.reuse ? keepAlive.http : false }
        : {
            host: target.https!.host,
            port: target.https!.port,
            cert: target.https!.cert,
            key: target.https!.key,
            rejectUnauthorized: false,
            agent: opts.reuse ? keepAlive.https : false,
          }),
    };
    const req = (target.socketPath ? http : https).request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        done = true;
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        // Answered before the whole body went out: stop sending it.
        if (!req.writableFinished) req.destroy();
      });
    });
    req.on('error', (e) => {
      if (!done) reject(e);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    if (!chunked) return void req.end(payload);
    let offset = 0;
    const pump = () => {
      while (!done && offset < payload.length) {
        const piece = payload.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!done) req.end();
    };
    pump();
  });
}

function send(target: Target, c: Case): Promise<Reply> {
  if (Buffer.isBuffer(c.body))
    return sendBuffer(target, c.method, c.path, c.body, { chunked: c.chunked, reuse: c.reuse }, c.headers);
  return client(target).request(c.method, c.path, c.body, c.headers);
}

/** Run every case; return one line per case that did not get its exact error envelope. */
async function walk(target: Target, cases: Case[]): Promise<string[]> {
  const problems: string[] = [];
  for (const c of cases) {
    let res: Reply;
    try {
      res = await send(target, c);
    } catch (e) {
      problems.push(`${c.method} ${c.path.slice(0, 80)} [${c.what}]: request failed: ${String(e)}`);
      continue;
    }
    const p = envelopeProblem(res, c);
    if (p) problems.push(`${c.method} ${c.path.slice(0, 80)} [${c.what}]: ${p}`);
  }
  return problems;
}

// --- The table -----------------------------------------------------------------------------

const FIVE_MIB = Buffer.from(JSON.stringify({ name: 'huge', description: 'x'.repeat(5 * 1024 * 1024), config: {} }));
/** One byte over the 4 MiB limit: `{"description":"xx…x"}`. */
const JUST_OVER = Buffer.from(`{"description":"${'x'.repeat(4 * 1024 * 1024 - 17)}"}`);
const LONG = 'n'.repeat(65);
const BAD_NAMES: [string, unknown][] = [
  ['65 characters', LONG],
  ['300 characters', 'n'.repeat(300)],
  ['a slash', 'a/b'],
  ['a space', 'a b'],
  ['..', '..'],
  ['.', '.'],
  ['empty', ''],
  ['a NUL', 'a\u0000b'],
];

type Kind =
  | 'server'
  | 'profile-create'
  | 'profile-update'
  | 'profile-rename'
  | 'project-create'
  | 'project-update'
  | 'project-rename'
  | 'cert-create'
  | 'cert-update';

/** Bodies every JSON write endpoint refuses with 400, whatever it expects. */
function genericCases(method: string, path: string, stringField: (s: string) => unknown): Case[] {
  return [
    { what: 'malformed JSON', method, path, body: '{"name":', status: 400, mentions: /json/i },
    { what: 'trailing garbage', method, path, body: '{"name":"x"} {', status: 400, mentions: /json/i },
    { what: 'a JSON array', method, path, body: '[]', status: 400, mentions: /object/i },
    { what: 'a JSON array of objects', method, path, body: '[{"name":"arr"}]', status: 400, mentions: /object/i },
    { what: 'a JSON string', method, path, body: '"x"', status: 400, mentions: /object/i },
    { what: 'a JSON number', method, path, body: '5', status: 400, mentions: /object/i },
    { what: 'a JSON boolean', method, path, body: 'true', status: 400, mentions: /object/i },
    { what: '5 MiB body with Content-Length', method, path, body: FIVE_MIB, status: 400, mentions: /too large/i },
    {
      what: '5 MiB body with Content-Length, keep-alive',
      method,
      path,
      body: FIVE_MIB,
      reuse: true,
      status: 400,
      mentions: /too large/i,
    },
    {
      what: '5 MiB body, chunked, no Content-Length',
      method,
      path,
      body: FIVE_MIB,
      chunked: true,
      status: 400,
      mentions: /too large/i,
    },
    {
      what: '5 MiB body, chunked, keep-alive',
      method,
      path,
      body: FIVE_MIB,
      chunked: true,
      reuse: true,
      status: 400,
      mentions: /too large/i,
    },
    { what: '4 MiB + 1 byte', method, path, body: JUST_OVER, status: 400, mentions: /too large/i },
    { what: 'a NUL character in a string', method, path, body: stringField('a\u0000b'), status: 400, mentions: /NUL/ },
  ];
}

function casesFor(kind: Kind, method: string, path: string): Case[] {
  const c = (
    what: string,
    body: unknown,
    status: Status,
    mentions?: RegExp,
    headers?: Record<string, string>,
  ): Case => ({
    what,
    method,
    path,
    body,
    status,
    ...(mentions ? { mentions } : {}),
    ...(headers ? { headers } : {}),
  });
  switch (kind) {
    case 'server':
      return [
        ...genericCases(method, path, (s) => ({ config: { 'core.trust_password': s } })),
        c('config: "x"', { config: 'x' }, 400, /config/),
        c('config: []', { config: [] }, 400, /config/),
        c('config: 5', { config: 5 }, 400, /config/),
        c('config value {}', { config: { 'core.https_allowed_credentials': {} } }, 400, /config/),
        c('config value []', { config: { 'core.https_allowed_credentials': [] } }, 400, /config/),
        c('unknown key core.nope', { config: { 'core.nope': 'x' } }, 400, /core\.nope/),
        c(
          'a good key next to an unknown one',
          { config: { 'core.https_allowed_credentials': 'true', 'core.nope': 'x' } },
          400,
          /core\.nope/,
        ),
        c(
          'bad boolean value',
          { config: { 'core.https_allowed_credentials': 'maybe' } },
          400,
          /core\.https_allowed_credentials/,
        ),
        c('bad listen address', { config: { 'core.https_address': 'nowhere:99999' } }, 400, /core\.https_address/),
        c('stale If-Match', { config: { 'core.https_allowed_credentials': 'true' } }, 412, undefined, {
          'If-Match': '"0000"',
        }),
      ];
    case 'profile-create':
      return [
        ...genericCases(method, path, (s) => ({ name: 'nul', description: s })),
        c('name: 5', { name: 5 }, 400, /name/),
        c('name: {}', { name: {} }, 400, /name/),
        c('no name', { description: 'x' }, 400, /name/),
        c('config: "x"', { name: 'bad1', config: 'x' }, 400, /config/),
        c('config: {k: {}}', { name: 'bad1', config: { 'user.k': {} } }, 400, /config/),
        c('config: []', { name: 'bad1', config: [] }, 400, /config/),
        c('devices: []', { name: 'bad1', devices: [] }, 400, /devices/),
        c('devices: "x"', { name: 'bad1', devices: 'x' }, 400, /devices/),
        c('device: "x"', { name: 'bad1', devices: { d: 'x' } }, 400, /devices/),
        c('description: 7', { name: 'bad1', description: 7 }, 400, /description/),
        c('unknown key limits.bogus', { name: 'bad1', config: { 'limits.bogus': '1' } }, 400, /limits\.bogus/),
        c('bad value for limits.memory', { name: 'bad1', config: { 'limits.memory': 'lots' } }, 400, /limits\.memory/),
        c('device of unknown type', { name: 'bad1', devices: { d: { type: 'warp-drive' } } }, 400, /warp-drive/),
        c('device without type', { name: 'bad1', devices: { d: { path: '/x' } } }, 400, /type/),
        c('disk without path', { name: 'bad1', devices: { d: { type: 'disk', source: '/srv' } } }, 400, /path/),
        c(
          'disk with relative path',
          { name: 'bad1', devices: { d: { type: 'disk', source: '/srv', path: 'srv' } } },
          400,
          /path/,
        ),
        c(
          'device with unknown property',
          { name: 'bad1', devices: { d: { type: 'none', colour: 'red' } } },
          400,
          /colour/,
        ),
        c('device with a bad name', { name: 'bad1', devices: { 'bad name!': { type: 'none' } } }, 400, /bad name!/),
        ...BAD_NAMES.map(([what, name]) => c(`name with ${what}`, { name }, 400, /name/i)),
        // `web` lives in the default project only; every project with features.profiles has a `default`.
        ...(path.includes('project=p1') ? [] : [c('duplicate: existing profile', { name: 'web' }, 409, /web/)]),
        c('duplicate: default', { name: 'default' }, 409, /default/),
      ];
    case 'profile-update':
      return [
        ...genericCases(method, path, (s) => ({ description: s })),
        c('config: "x"', { config: 'x' }, 400, /config/),
        c('config: {k: {}}', { config: { 'user.k': {} } }, 400, /config/),
        c('config: []', { config: [] }, 400, /config/),
        c('devices: []', { devices: [] }, 400, /devices/),
        c('description: 7', { description: 7 }, 400, /description/),
        c('unknown key limits.bogus', { config: { 'limits.bogus': '1' } }, 400, /limits\.bogus/),
        c(
          'good changes next to an unknown key',
          { description: 'changed', config: { 'user.ok': '1', 'limits.bogus': '1' } },
          400,
          /limits\.bogus/,
        ),
        c(
          'good changes next to a bad device',
          { description: 'changed', devices: { d: { type: 'warp-drive' } } },
          400,
          /warp-drive/,
        ),
        c('disk without path', { devices: { d: { type: 'disk', source: '/srv' } } }, 400, /path/),
        c('stale If-Match', { description: 'changed' }, 412, undefined, { 'If-Match': '"0000"' }),
      ];
    case 'profile-rename':
      return [
        ...genericCases(method, path, (s) => ({ name: s })),
        c('name: 5', { name: 5 }, 400, /name/),
        c('name: []', { name: [] }, 400, /name/),
        c('no name', {}, 400, /name/),
        ...BAD_NAMES.map(([what, name]) => c(`name with ${what}`, { name }, 400, /name/i)),
        c('to an existing name', { name: 'default' }, 409, /default/),
      ];
    case 'project-create':
      return [
        ...genericCases(method, path, (s) => ({ name: 'nul', description: s })),
        c('name: 5', { name: 5 }, 400, /name/),
        c('no name', { description: 'x' }, 400, /name/),
        c('config: "x"', { name: 'bad1', config: 'x' }, 400, /config/),
        c('config: {k: {}}', { name: 'bad1', config: { 'user.k': {} } }, 400, /config/),
        c('config: []', { name: 'bad1', config: [] }, 400, /config/),
        c('description: 7', { name: 'bad1', description: 7 }, 400, /description/),
        c('unknown key features.nope', { name: 'bad1', config: { 'features.nope': 'true' } }, 400, /features\.nope/),
        c(
          'bad boolean for features.profiles',
          { name: 'bad1', config: { 'features.profiles': 'perhaps' } },
          400,
          /features\.profiles/,
        ),
        ...BAD_NAMES.map(([what, name]) => c(`name with ${what}`, { name }, 400, /name/i)),
        c('duplicate: existing project', { name: 'p1' }, 409, /p1/),
        c('duplicate: default', { name: 'default' }, 409, /default/),
      ];
    case 'project-update':
      return [
        ...genericCases(method, path, (s) => ({ description: s })),
        c('config: "x"', { config: 'x' }, 400, /config/),
        c('config: {k: {}}', { config: { 'user.k': {} } }, 400, /config/),
        c('config: []', { config: [] }, 400, /config/),
        c('description: 7', { description: 7 }, 400, /description/),
        c('unknown key features.nope', { config: { 'features.nope': 'true' } }, 400, /features\.nope/),
        c(
          'good changes next to an unknown key',
          { description: 'changed', config: { 'user.ok': '1', 'features.nope': 'x' } },
          400,
          /features\.nope/,
        ),
        c('stale If-Match', { description: 'changed' }, 412, undefined, { 'If-Match': '"0000"' }),
      ];
    case 'project-rename':
      return [
        ...genericCases(method, path, (s) => ({ name: s })),
        c('name: 5', { name: 5 }, 400, /name/),
        c('no name', {}, 400, /name/),
        ...BAD_NAMES.map(([what, name]) => c(`name with ${what}`, { name }, 400, /name/i)),
        c('to an existing name', { name: 'default' }, 409, /default/),
      ];
    case 'cert-create':
      return [
        ...genericCases(method, path, (s) => ({ type: 'client', name: s })),
        c('name: 5', { type: 'client', name: 5 }, 400, /name/),
        c('type: 5', { type: 5 }, 400, /type/),
        c('certificate: 7', { type: 'client', certificate: 7 }, 400, /certificate/),
        c('certificate: {}', { type: 'client', certificate: {} }, 400, /certificate/),
        c('password: 1', { type: 'client', password: 1 }, 400, /password/),
        c('not a certificate', { type: 'client', certificate: 'not a cert' }, 400, /certificate/i),
      ];
    case 'cert-update':
      return [
        ...genericCases(method, path, (s) => ({ type: 'client', name: s })),
        c('name: 5', { type: 'client', name: 5 }, 400, /name/),
        c('name: []', { type: 'client', name: [] }, 400, /name/),
        c('type: 5', { type: 5, name: 'x' }, 400, /type/),
        c('type: server', { type: 'server', name: 'x' }, 400, /type/),
        c('stale If-Match', { type: 'client', name: 'x' }, 412, undefined, { 'If-Match': '"0000"' }),
      ];
  }
}

describe('bad input on every write endpoint: exact error envelopes, nothing half-written, daemon stays up', () => {
  let d: Daemon;
  let local: Client;
  let port: number;
  let admin: { cert: string; key: string };
  let other: { cert: string; key: string };
  let otherFp: string;
  let before0: Awaited<ReturnType<typeof snapshot>>;
  const httpsTarget = (cert?: { cert: string; key: string }): Target => ({
    https: { host: '127.0.0.1', port, ...(cert ?? {}) },
  });

  /** Everything the walk could touch, as the API shows it (objects, lists and ETags). */
  async function snapshot(api: Client) {
    const get = async (path: string) => {
      const r = await api.get(path);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      return { metadata: r.json.metadata, etag: r.headers.etag };
    };
    const server = await get('/1.0');
    const lists = {
      profiles: await get('/1.0/profiles?recursion=1'),
      profilesP1: await get('/1.0/profiles?recursion=1&project=p1'),
      projects: await get('/1.0/projects?recursion=1'),
      certificates: await get('/1.0/certificates?recursion=1'),
      urls: [
        await get('/1.0/profiles'),
        await get('/1.0/profiles?project=p1'),
        await get('/1.0/projects'),
        await get('/1.0/certificates'),
      ],
    };
    const objects: Record<string, unknown> = {};
    for (const p of lists.profiles.metadata as { name: string }[])
      objects[`profile ${p.name}`] = await get(`/1.0/profiles/${p.name}`);
    for (const p of lists.profilesP1.metadata as { name: string }[])
      objects[`p1 profile ${p.name}`] = await get(`/1.0/profiles/${p.name}?project=p1`);
    for (const p of lists.projects.metadata as { name: string }[])
      objects[`project ${p.name}`] = await get(`/1.0/projects/${p.name}`);
    for (const c of lists.certificates.metadata as { fingerprint: string }[])
      objects[`certificate ${c.fingerprint}`] = await get(`/1.0/certificates/${c.fingerprint}`);
    return { server: { config: server.metadata.config, etag: server.etag }, lists, objects };
  }

  function endpoints(): [Kind, string, string][] {
    return [
      ['server', 'PUT', '/1.0'],
      ['server', 'PATCH', '/1.0'],
      ['profile-create', 'POST', '/1.0/profiles'],
      ['profile-create', 'POST', '/1.0/profiles?project=p1'],
      ['profile-update', 'PUT', '/1.0/profiles/web'],
      ['profile-update', 'PATCH', '/1.0/profiles/web'],
      ['profile-rename', 'POST', '/1.0/profiles/web'],
      ['profile-update', 'PATCH', '/1.0/profiles/default?project=p1'],
      ['project-create', 'POST', '/1.0/projects'],
      ['project-update', 'PUT', '/1.0/projects/p1'],
      ['project-update', 'PATCH', '/1.0/projects/p1'],
      ['project-rename', 'POST', '/1.0/projects/p1'],
      ['cert-create', 'POST', '/1.0/certificates'],
      ['cert-update', 'PUT', `/1.0/certificates/${otherFp}`],
      ['cert-update', 'PATCH', `/1.0/certificates/${otherFp}`],
    ];
  }

  /** Requests naming objects that do not exist, conflicting or forbidden ones, and wrong methods. */
  function objectCases(): Case[] {
    const missingFp = 'f'.repeat(64);
    const good = { description: 'x' };
    return [
      // 404: the object (or the project in ?project=) does not exist. A valid body, so only the path is wrong.
      ...['PUT', 'PATCH', 'DELETE'].map(
        (method): Case => ({ what: 'missing profile', method, path: '/1.0/profiles/missing', body: good, status: 404 }),
      ),
      {
        what: 'rename a missing profile',
        method: 'POST',
        path: '/1.0/profiles/missing',
        body: { name: 'new-name' },
        status: 404,
      },
      ...['PUT', 'PATCH', 'DELETE'].map(
        (method): Case => ({ what: 'missing project', method, path: '/1.0/projects/missing', body: good, status: 404 }),
      ),
      {
        what: 'rename a missing project',
        method: 'POST',
        path: '/1.0/projects/missing',
        body: { name: 'new-name' },
        status: 404,
      },
      ...['PUT', 'PATCH', 'DELETE'].map(
        (method): Case => ({
          what: 'missing certificate',
          method,
          path: `/1.0/certificates/${missingFp}`,
          body: { type: 'client', name: 'x' },
          status: 404,
        }),
      ),
      {
        what: 'non-hex fingerprint',
        method: 'PATCH',
        path: '/1.0/certificates/not-hex',
        body: { name: 'x' },
        status: 404,
      },
      {
        what: 'fingerprint with an encoded slash',
        method: 'PUT',
        path: `/1.0/certificates/${otherFp.slice(0, 8)}%2F`,
        body: { type: 'client', name: 'x' },
        status: 404,
      },
      {
        what: 'profile name with an encoded slash',
        method: 'PUT',
        path: '/1.0/profiles/a%2Fb',
        body: good,
        status: 404,
      },
      { what: 'profile name with an encoded slash', method: 'DELETE', path: '/1.0/profiles/web%2F', status: 404 },
      {
        what: 'profile name of 300 characters',
        method: 'PATCH',
        path: `/1.0/profiles/${'n'.repeat(300)}`,
        body: good,
        status: 404,
      },
      {
        what: 'profile name with an encoded NUL',
        method: 'PUT',
        path: '/1.0/profiles/web%00',
        body: good,
        status: 404,
      },
      { what: 'profile name with a space', method: 'PUT', path: '/1.0/profiles/web%20', body: good, status: 404 },
      {
        what: 'project name with an encoded slash',
        method: 'PATCH',
        path: '/1.0/projects/p1%2Fx',
        body: good,
        status: 404,
      },
      {
        what: 'project name of 300 characters',
        method: 'DELETE',
        path: `/1.0/projects/${'n'.repeat(300)}`,
        status: 404,
      },
      {
        what: 'unknown ?project=',
        method: 'POST',
        path: '/1.0/profiles?project=missing',
        body: { name: 'lost' },
        status: 404,
      },
      {
        what: '?project= of 100 characters',
        method: 'POST',
        path: `/1.0/profiles?project=${'p'.repeat(100)}`,
        body: { name: 'lost' },
        status: 404,
      },
      {
        what: '?project= with an encoded NUL',
        method: 'PATCH',
        path: '/1.0/profiles/web?project=p%00',
        body: good,
        status: 404,
      },
      // 409: names already taken.
      {
        what: 'rename a profile onto another',
        method: 'POST',
        path: '/1.0/profiles/web',
        body: { name: 'db' },
        status: 409,
      },
      {
        what: 'add a certificate already trusted',
        method: 'POST',
        path: '/1.0/certificates',
        body: { type: 'client', certificate: other.cert },
        status: 409,
      },
      // 403: the default profile and project are protected (checked whatever the new name).
      {
        what: 'rename the default profile',
        method: 'POST',
        path: '/1.0/profiles/default',
        body: { name: 'renamed' },
        status: 403,
      },
      { what: 'delete the default profile', method: 'DELETE', path: '/1.0/profiles/default', status: 403 },
      {
        what: 'delete the default profile of p1',
        method: 'DELETE',
        path: '/1.0/profiles/default?project=p1',
        status: 403,
      },
      {
        what: 'rename the default project',
        method: 'POST',
        path: '/1.0/projects/default',
        body: { name: 'renamed' },
        status: 403,
      },
      { what: 'delete the default project', method: 'DELETE', path: '/1.0/projects/default', status: 403 },
      // Wrong methods on known paths: 400 with `Allow`.
      {
        what: 'wrong method',
        method: 'POST',
        path: '/1.0',
        body: { config: {} },
        status: 400,
        allow: 'GET, PUT, PATCH',
      },
      { what: 'wrong method', method: 'DELETE', path: '/1.0', status: 400, allow: 'GET, PUT, PATCH' },
      {
        what: 'wrong method',
        method: 'PUT',
        path: '/1.0/profiles',
        body: { name: 'x' },
        status: 400,
        allow: 'GET, POST',
      },
      { what: 'wrong method', method: 'DELETE', path: '/1.0/profiles', status: 400, allow: 'GET, POST' },
      { what: 'wrong method', method: 'PATCH', path: '/1.0/projects', body: {}, status: 400, allow: 'GET, POST' },
      { what: 'wrong method', method: 'PUT', path: '/1.0/certificates', body: {}, status: 400, allow: 'GET, POST' },
      {
        what: 'wrong method',
        method: 'POST',
        path: `/1.0/certificates/${otherFp}`,
        body: { name: 'x' },
        status: 400,
        allow: 'GET, PUT, PATCH, DELETE',
      },
      { what: 'wrong method', method: 'PUT', path: '/1.0/resources', body: {}, status: 400, allow: 'GET' },
      { what: 'wrong method', method: 'POST', path: '/', body: {}, status: 400, allow: 'GET' },
      // Refused before the body is read: the answer must still arrive, and the connection stay usable.
      {
        what: 'wrong method, 5 MiB body',
        method: 'POST',
        path: '/1.0',
        body: FIVE_MIB,
        status: 400,
        allow: 'GET, PUT, PATCH',
      },
      {
        what: 'wrong method, 5 MiB body, chunked',
        method: 'DELETE',
        path: '/1.0',
        body: FIVE_MIB,
        chunked: true,
        status: 400,
        allow: 'GET, PUT, PATCH',
      },
      {
        what: 'wrong method, 5 MiB body, keep-alive',
        method: 'PUT',
        path: '/1.0/profiles',
        body: FIVE_MIB,
        reuse: true,
        status: 400,
        allow: 'GET, POST',
      },
      { what: 'unknown path, 5 MiB body', method: 'PUT', path: '/1.0/nonexistent', body: FIVE_MIB, status: 404 },
      {
        what: 'unknown path, 5 MiB body, keep-alive',
        method: 'POST',
        path: '/2.0',
        body: FIVE_MIB,
        reuse: true,
        status: 404,
      },
      {
        what: 'unknown project, 5 MiB body',
        method: 'POST',
        path: '/1.0/profiles?project=missing',
        body: FIVE_MIB,
        status: 404,
      },
      {
        what: 'missing profile, 5 MiB body, chunked, keep-alive',
        method: 'PUT',
        path: '/1.0/profiles/missing',
        body: FIVE_MIB,
        chunked: true,
        reuse: true,
        status: 400,
      },
      {
        what: 'rename default profile, 5 MiB body',
        method: 'POST',
        path: '/1.0/profiles/default',
        body: FIVE_MIB,
        status: 400,
      },
    ];
  }

  before(async () => {
    d = await startDaemon();
    local = client({ socketPath: d.socketPath });
    port = await freePort();
    [admin, other] = await Promise.all([makeClientCertificate('admin'), makeClientCertificate('other')]);
    otherFp = fp(other.cert);
    const ok = (r: Reply, what: string) =>
      assert.ok(r.status === 200 || r.status === 202, `${what}: ${r.status} ${r.text}`);
    ok(
      await local.patch('/1.0', {
        config: { 'core.https_address': `127.0.0.1:${port}`, 'core.trust_password': 'sekrit' },
      }),
      'open HTTPS',
    );
    ok(
      await local.post('/1.0/certificates', { type: 'client', certificate: admin.cert, name: 'admin' }),
      'trust admin',
    );
    ok(
      await local.post('/1.0/certificates', { type: 'client', certificate: other.cert, name: 'other' }),
      'trust other',
    );
    ok(
      await local.post('/1.0/profiles', {
        name: 'web',
        description: 'web servers',
        config: { 'limits.cpu': '2', 'user.role': 'web' },
        devices: { data: { type: 'disk', source: '/srv/data', path: '/data' } },
      }),
      'create web',
    );
    ok(await local.post('/1.0/profiles', { name: 'db', config: { 'user.role': 'db' } }), 'create db');
    ok(
      await local.post('/1.0/projects', {
        name: 'p1',
        description: 'project one',
        config: { 'features.profiles': 'true', 'user.team': 'a' },
      }),
      'create p1',
    );
    before0 = await snapshot(local);
    // The fixtures are there (so the walk below really targets existing objects).
    assert.deepEqual(before0.lists.urls[0]!.metadata, [
      '/1.0/profiles/db',
      '/1.0/profiles/default',
      '/1.0/profiles/web',
    ]);
    assert.deepEqual(before0.lists.urls[2]!.metadata, ['/1.0/projects/default', '/1.0/projects/p1']);
    assert.equal((before0.lists.certificates.metadata as unknown[]).length, 2);
  });
  after(async () => {
    keepAlive.http.destroy();
    keepAlive.https.destroy();
    await d?.destroy();
  });

  const allCases = () => [
    ...endpoints().flatMap(([kind, method, path]) => casesFor(kind, method, path)),
    ...objectCases(),
  ];

  test('over the unix socket: every bad request gets its exact error envelope, and nothing changes', async () => {
    const cases = allCases();
    assert.ok(cases.length > 250, `the table has ${cases.length} cases`);
    const problems = await walk({ socketPath: d.socketPath }, cases);
    assert.deepEqual(problems, [], `${problems.length} of ${cases.length} cases went wrong`);
    assert.deepEqual(await snapshot(local), before0, 'nothing was half-written');
  });

  test('over HTTPS as a trusted client: the same walk, the same answers, nothing changes', async () => {
    const target = httpsTarget(admin);
    assert.equal((await client(target).get('/1.0')).json.metadata.auth, 'trusted');
    const cases = allCases();
    const problems = await walk(target, cases);
    assert.deepEqual(problems, [], `${problems.length} of ${cases.length} cases went wrong`);
    assert.deepEqual(await snapshot(local), before0, 'nothing was half-written');
    assert.deepEqual(await snapshot(client(target)), before0, 'the HTTPS view agrees');
  });

  test('authorization comes before the body: guests get 403 for bad bodies; untrusted callers get 400 on POST /1.0/certificates', async () => {
    const guest = httpsTarget();
    const untrusted = httpsTarget(await makeClientCertificate('stranger'));
    const cases: [Target, string, string, unknown, Status][] = [
      [guest, 'PUT', '/1.0', '{"config":', 403],
      [guest, 'PATCH', '/1.0/profiles/web', FIVE_MIB, 403],
      [guest, 'POST', '/1.0/profiles', FIVE_MIB, 403],
      [guest, 'POST', '/1.0/projects', '[]', 403],
      [untrusted, 'PUT', `/1.0/certificates/${otherFp}`, '{"name":', 403],
      // POST /1.0/certificates is open to untrusted callers: their body is read (and refused) first.
      [untrusted, 'POST', '/1.0/certificates', '{"password":', 400],
      [untrusted, 'POST', '/1.0/certificates', { type: 'client', password: 5 }, 400],
      [untrusted, 'POST', '/1.0/certificates', FIVE_MIB, 400],
      [untrusted, 'POST', '/1.0/certificates', { type: 'client', password: 'wrong' }, 403],
    ];
    const problems: string[] = [];
    for (const [target, method, path, body, status] of cases) {
      const c: Case = { what: '', method, path, body, status };
      const p = envelopeProblem(await send(target, c), c);
      if (p) problems.push(`${method} ${path}: ${p}`);
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(await snapshot(local), before0, 'nothing was half-written');
  });

  test('a refused oversized body leaves a keep-alive connection usable; exactly 4 MiB is accepted', async () => {
    for (const target of [{ socketPath: d.socketPath }, httpsTarget(admin)] as Target[]) {
      const agent = target.socketPath
        ? new http.Agent({ keepAlive: true, maxSockets: 1 })
        : new https.Agent({ keepAlive: true, maxSockets: 1 });
      const ports = new Set<string>();
      const one = (method: string, path: string, body: Buffer | undefined, chunked = false) =>
        new Promise<Reply>((resolve, reject) => {
          const req = (target.socketPath ? http : https).request(
            {
              method,
              path,
              agent,
              headers: body
                ? chunked
                  ? { 'Transfer-Encoding': 'chunked' }
                  : { 'Content-Length': String(body.length) }
                : {},
              ...(target.socketPath
                ? { socketPath: target.socketPath }
                : { host: '127.0.0.1', port, cert: admin.cert, key: admin.key, rejectUnauthorized: false }),
            },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (b: Buffer) => chunks.push(b));
              res.on('end', () => {
                const text = Buffer.concat(chunks).toString();
                resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) });
              });
            },
          );
          req.on('socket', (sock) => sock.once('connect', () => ports.add(String(sock.localPort ?? 'unix'))));
          req.on('error', reject);
          if (body && chunked)
            for (let o = 0; o < body.length; o += 256 * 1024) req.write(body.subarray(o, o + 256 * 1024));
          req.end(body && !chunked ? body : undefined);
        });
      try {
        const where = target.socketPath ? 'unix' : 'https';
        assert.equal((await one('PATCH', '/1.0/profiles/db', FIVE_MIB)).status, 400, where);
        assert.equal((await one('PATCH', '/1.0/profiles/db', FIVE_MIB, true)).status, 400, where);
        assert.equal((await one('PUT', '/1.0', JUST_OVER, true)).status, 400, where);
        const next = await one('GET', '/1.0/profiles/db', undefined);
        assert.equal(next.status, 200, `${where}: the next request on the connection is answered: ${next.text}`);
        assert.equal(next.json.metadata.name, 'db');
        if (!target.socketPath) assert.equal(ports.size, 1, 'all four requests went over one connection');
      } finally {
        agent.destroy();
      }
    }
    // The limit is 4 MiB: a body of exactly that size is read and applied.
    const exact = Buffer.from(`{"description":"${'d'.repeat(4 * 1024 * 1024 - 18)}"}`);
    assert.equal(exact.length, 4 * 1024 * 1024);
    const ok = await local.patch('/1.0/profiles/db', exact);
    assert.equal(ok.status, 200, ok.text.slice(0, 200));
    assert.equal((await local.get('/1.0/profiles/db')).json.metadata.description.length, 4 * 1024 * 1024 - 18);
    assert.equal((await local.patch('/1.0/profiles/db', { description: '' })).status, 200);
    assert.deepEqual(await snapshot(local), before0, 'back to where it was (the ETag is a hash of the content)');
  });

  test('odd paths: error envelopes, or the resource the path really names once normalized', async () => {
    const problems: string[] = [];
    const expectEnvelope = async (path: string, status: Status, mentions?: RegExp) => {
      const res = await local.get(path);
      const p = envelopeProblem(res, { what: '', method: 'GET', path, status, ...(mentions ? { mentions } : {}) });
      if (p) problems.push(`GET ${path.slice(0, 80)}: ${p}`);
      return res;
    };
    // `%2e%2e` is a dot-dot segment for URL parsers (WHATWG): the path resolves to `/1.0/`, which
    // is not a route (no trailing-slash aliasing), so a 404 envelope, never a listing.
    await expectEnvelope('/1.0/profiles/%2e%2e', 404);
    await expectEnvelope('/1.0/profiles/%2E%2E/', 404);
    // An encoded slash stays inside the name segment; no profile can have a `/` in its name.
    await expectEnvelope('/1.0/profiles/a%2Fb', 404, /a\/b/);
    await expectEnvelope('/1.0/profiles/default%2F', 404);
    await expectEnvelope('/1.0/projects/default%2F..%2F..', 404);
    await expectEnvelope(`/1.0/profiles/${'n'.repeat(300)}`, 404);
    await expectEnvelope(`/1.0/projects/${'n'.repeat(300)}`, 404);
    await expectEnvelope(`/1.0/certificates/${'f'.repeat(300)}`, 404);
    await expectEnvelope('/1.0/profiles/%00', 404);
    await expectEnvelope('/1.0/profiles/%ZZ', 404);
    // `..` in a raw path is resolved before routing: this is /etc/passwd, which is no route. The
    // file must never be served.
    const passwd = await expectEnvelope('/1.0/../../etc/passwd', 404);
    assert.doesNotMatch(passwd.text, /root:/);
    await expectEnvelope('/1.0/%2e%2e/%2e%2e/etc/passwd', 404);
    await expectEnvelope('/1.0/nonexistent', 404);
    await expectEnvelope('/1.0/profiles/web/nonexistent', 404);
    await expectEnvelope('/2.0', 404);
    await expectEnvelope('/2.0/profiles', 404);
    await expectEnvelope('//1.0', 404);
    await expectEnvelope('/1.0//profiles', 404);
    await expectEnvelope('/1.0/profiles//web', 404);
    await expectEnvelope('/1.0/profiles/', 404);
    await expectEnvelope('/1.0/profiles?recursion=abc', 400, /recursion/);
    await expectEnvelope('/1.0/projects?recursion=-1', 400, /recursion/);
    await expectEnvelope('/1.0/certificates?recursion=1e3', 400, /recursion/);
    await expectEnvelope(`/1.0/profiles?project=${'p'.repeat(100)}`, 404, /project/i);
    await expectEnvelope(`/1.0?project=${'p'.repeat(100)}`, 404, /project/i);
    await expectEnvelope('/1.0/profiles?project=missing', 404, /project/i);
    await expectEnvelope('/1.0/profiles?project=%00', 404, /project/i);
    await expectEnvelope('/1.0/profiles?project=..', 404, /project/i);
    assert.deepEqual(problems, []);

    // Paths that normalize to a real resource answer as that resource does.
    // `/1.0/./profiles` is `/1.0/profiles` after dot-segment removal.
    const dot = await local.get('/1.0/./profiles');
    assert.equal(dot.status, 200, dot.text);
    assert.deepEqual(dot.json.metadata, before0.lists.urls[0]!.metadata);
    // `/1.0/profiles/web/../db` is `/1.0/profiles/db`.
    const up = await local.get('/1.0/profiles/web/../db');
    assert.equal(up.status, 200, up.text);
    assert.equal(up.json.metadata.name, 'db');
    // An empty ?project= is no project parameter at all: the default project.
    const empty = await local.get('/1.0/profiles?project=');
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.json.metadata, before0.lists.urls[0]!.metadata);
    assert.deepEqual(await snapshot(local), before0, 'nothing was half-written');
  });

  test('a request the HTTP parser refuses gets a 400 envelope on a raw socket, and the daemon keeps serving', async () => {
    const raw = (payload: string) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect(d.socketPath);
        let out = '';
        s.on('data', (b) => (out += b.toString()));
        s.on('end', () => resolve(out));
        s.on('close', () => resolve(out));
        s.on('error', reject);
        s.setTimeout(10_000, () => s.destroy(new Error('raw request timed out')));
        s.end(payload);
      });
    for (const payload of [
      'HELLO\r\n\r\n',
      'GET /1.0 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'PUT /1.0 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      `GET /1.0 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    ]) {
      const text = await raw(payload);
      const [head = '', body = ''] = text.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 4\d\d /, `${JSON.stringify(payload.slice(0, 40))} → ${text.slice(0, 200)}`);
      if (/^HTTP\/1\.1 400 /.test(head)) {
        const j = JSON.parse(body);
        assert.equal(j.type, 'error');
        assert.equal(j.error_code, 400);
      }
    }
    assert.equal((await local.get('/1.0')).status, 200);
  });

  test('null top-level fields count as absent; unknown top-level fields are ignored', async () => {
    const created = await local.post('/1.0/profiles', '{"name":"x","description":null,"config":null,"devices":null}');
    assert.equal(created.status, 200, created.text);
    const x = await local.get('/1.0/profiles/x');
    assert.deepEqual(x.json.metadata, { name: 'x', description: '', config: {}, devices: {}, used_by: [] });

    const y = await local.post(
      '/1.0/profiles',
      '{"name":"y","type":"container","project":"default","whatever":1,"config":{"user.a":"b"}}',
    );
    assert.equal(y.status, 200, y.text);
    assert.deepEqual((await local.get('/1.0/profiles/y')).json.metadata.config, { 'user.a': 'b' });
    // `project` in the body is not the ?project= parameter: y is in the default project, not p1.
    expectStatus(await local.get('/1.0/profiles/y?project=p1'), 404);

    // PATCH with nulls changes nothing; with an unknown field it applies the known ones only.
    const web = (await local.get('/1.0/profiles/web')).json.metadata;
    assert.equal(
      (await local.patch('/1.0/profiles/web', '{"description":null,"config":null,"devices":null}')).status,
      200,
    );
    assert.deepEqual((await local.get('/1.0/profiles/web')).json.metadata, web);
    assert.equal(
      (await local.patch('/1.0/projects/p1', { description: 'still one', name: 'ignored', used_by: ['x'] })).status,
      200,
    );
    const p1 = (await local.get('/1.0/projects/p1')).json.metadata;
    assert.equal(p1.name, 'p1');
    assert.equal(p1.description, 'still one');
    assert.equal((await local.patch('/1.0', '{"config":null,"extra":true}')).status, 200);
    assert.deepEqual((await local.get('/1.0')).json.metadata.config, before0.server.config);
    const list = (await local.get('/1.0/profiles')).json.metadata;
    assert.deepEqual(list, [
      '/1.0/profiles/db',
      '/1.0/profiles/default',
      '/1.0/profiles/web',
      '/1.0/profiles/x',
      '/1.0/profiles/y',
    ]);
  });

  test('after all of it the daemon is up on both listeners and logged no internal error', async () => {
    assert.equal(d.proc.exitCode, null);
    assert.equal(d.proc.signalCode, null);
    const res = await local.get('/1.0');
    assert.equal(res.status, 200);
    assert.equal(res.json.metadata.environment.server_pid, d.proc.pid);
    assert.equal((await client(httpsTarget(admin)).get('/1.0')).json.metadata.auth, 'trusted');
    const internal = d
      .output()
      .split('\n')
      .filter((l) => /"msg":"request failed"/.test(l));
    assert.deepEqual(internal, [], 'no request ended in a 500');
  });
});

function expectStatus(res: Reply, status: number): void {
  assert.equal(res.status, status, res.text);
}
