import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import {
  addCertificate,
  deleteCertificate,
  listCertificates,
  parseCertificate,
  readCertificate,
  updateCertificate,
} from '../../desired/certificates.ts';
import { ForbiddenError, ValidationError } from '../../desired/errors.ts';
import type { CertificateRow } from '../../desired/schema/index.ts';
import { readServerKeys, verifyPassword } from '../../desired/server-config.ts';
import { emitLifecycle } from '../../events/index.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const AddBody = v.object({
  type: v.optional(v.string('expected a string'), 'client'),
  certificate: optionalString,
  name: optionalString,
  password: optionalString,
});
const UpdateBody = v.object({ type: v.optional(v.string('expected a string'), 'client'), name: optionalString });

const url = (fp: string) => `/1.0/certificates/${fp}`;
const render = (r: CertificateRow) => ({
  type: r.type,
  certificate: r.certificate,
  name: r.name,
  fingerprint: r.fingerprint,
});
const editable = (r: CertificateRow) => ({ type: r.type, name: r.name });

export function registerCertificateRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus, trust, node } = deps;
  const lifecycle = (action: string, fp: string) =>
    emitLifecycle(bus, { action: `certificate-${action}`, source: url(fp) });

  route(app, '/1.0/certificates', {
    GET: async (c) =>
      sync(c, await renderCollection(c, await listCertificates(db), { url: (r) => url(r.fingerprint), render })),
    POST: {
      auth: 'untrusted',
      handler: async (c) => {
        const caller = c.get('caller');
        const body = await readJson(c, AddBody);
        // PKI mode: a certificate the CA did not issue, or revoked, is never trusted, password or not.
        if (caller.level !== 'trusted' && caller.pkiRefusal)
          throw new ForbiddenError(
            `not authorized: the client certificate is refused by the server CA (${caller.pkiRefusal})`,
          );
        if (caller.level !== 'trusted') {
          // An untrusted caller adds its own certificate, with the trust password.
          const { 'core.trust_password': hash } = await readServerKeys(db, node, ['core.trust_password']);
          if (!body.password || !(await verifyPassword(body.password, hash)))
            throw new ForbiddenError('not authorized: wrong or missing trust password');
          if (body.certificate && parseCertificate(body.certificate).fingerprint !== caller.fingerprint)
            throw new ForbiddenError('not authorized: an untrusted client can only add its own certificate');
        }
        // An empty string is absent: `lxc remote add` sends `"certificate": ""` (and `"name": ""`) and
        // means the certificate its TLS connection presented.
        const pem = body.certificate || caller.certificatePem;
        if (!pem) throw new ValidationError('No certificate given and none presented on the connection');
        const row = await addCertificate(db, { pem, name: body.name || caller.address || '', type: body.type });
        await trust.invalidate();
        lifecycle('created', row.fingerprint);
        c.header('Location', url(row.fingerprint));
        return sync(c, {});
      },
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const fp = param(c, 'fingerprint');
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the update is conditional on the name and type read.
    const row = await checkedWrite(
      c.req.header('if-match'),
      () => readCertificate(db, fp),
      (cur) => computeEtag(editable(cur)),
      (cur) =>
        updateCertificate(
          db,
          cur.fingerprint,
          { type: body.type, name: body.name ?? (replace ? '' : cur.name) },
          editable(cur),
        ),
    );
    lifecycle('updated', row.fingerprint);
    return sync(c, {});
  };

  route(app, '/1.0/certificates/:fingerprint', {
    GET: async (c) => {
      const row = await readCertificate(db, param(c, 'fingerprint'));
      return sync(c, render(row), { etag: computeEtag(editable(row)) });
    },
    PUT: update(true),
    PATCH: update(false),
    DELETE: async (c) => {
      const row = await readCertificate(db, param(c, 'fingerprint'));
      await deleteCertificate(db, row.fingerprint);
      await trust.invalidate();
      lifecycle('deleted', row.fingerprint);
      return sync(c, {}, { status: 202 });
    },
  });
}
