import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiRequestSafe, cookieValue, sessionCookie, websocketSafe } from './ui-auth.ts';
import { urlHostOf } from './ui-routes.ts';

const host = '127.0.0.1:8443';

test('the session cookie: HttpOnly, Secure, SameSite=Strict; read back from a Cookie header', () => {
  assert.equal(sessionCookie('abc', 60), 'svcd_ui=abc; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict');
  assert.equal(cookieValue('a=1; svcd_ui=xyz; b=2', 'svcd_ui'), 'xyz');
  assert.equal(cookieValue('svcd_ui_other=1', 'svcd_ui'), undefined);
  assert.equal(cookieValue(undefined, 'svcd_ui'), undefined);
});

test('API requests: the X-SVC-UI header, and nothing that says another site', () => {
  const ok = { host, origin: undefined, secFetchSite: 'same-origin', uiHeader: '1' };
  assert.equal(apiRequestSafe(ok), true);
  assert.equal(apiRequestSafe({ ...ok, origin: `https://${host}` }), true);
  assert.equal(apiRequestSafe({ ...ok, secFetchSite: undefined }), true, 'older browsers send no Sec-Fetch-Site');
  assert.equal(apiRequestSafe({ ...ok, uiHeader: undefined }), false, 'a form or an image cannot add the header');
  assert.equal(apiRequestSafe({ ...ok, secFetchSite: 'cross-site' }), false);
  assert.equal(
    apiRequestSafe({ ...ok, secFetchSite: 'same-site' }),
    false,
    'another port of the host is another origin',
  );
  assert.equal(apiRequestSafe({ ...ok, origin: 'https://evil.example' }), false);
  assert.equal(apiRequestSafe({ ...ok, origin: `http://${host}` }), false);
});

test('websockets: Origin must be this server', () => {
  assert.equal(websocketSafe({ host, origin: `https://${host}`, secFetchSite: undefined }), true);
  assert.equal(websocketSafe({ host, origin: undefined, secFetchSite: undefined }), false);
  assert.equal(websocketSafe({ host, origin: 'https://127.0.0.1:9999', secFetchSite: undefined }), false);
  assert.equal(websocketSafe({ host, origin: `https://${host}`, secFetchSite: 'cross-site' }), false);
});

test('login URLs name the listener, loopback for a wildcard', () => {
  assert.equal(urlHostOf('127.0.0.1:8443'), '127.0.0.1:8443');
  assert.equal(urlHostOf('[::1]:9000'), '[::1]:9000');
  assert.equal(urlHostOf(':8443'), '127.0.0.1:8443');
  assert.equal(urlHostOf('0.0.0.0'), '127.0.0.1:8443');
  assert.equal(urlHostOf('[::]:8443'), '127.0.0.1:8443');
  assert.equal(urlHostOf('10.0.0.5'), '10.0.0.5:8443');
});
