import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { parseCertificate } from './certificates.ts';
import { ValidationError } from './errors.ts';

// A self-signed certificate (openssl req) whose base64 body is 704 characters: a multiple of 64.
const PEM = [
  '-----BEGIN CERTIFICATE-----',
  'MIICCjCCAY+gAwIBAgIUZtrWa9TRapPpzhaPF6YSYbhanoAwCgYIKoZIzj0EAwMw',
  'ITENMAsGA1UECgwEc3ZjZDEQMA4GA1UEAwwHcm9vdEBoaDAeFw0yNjExMjQxODQ0',
  'MjZaFw0zNjExMjExODQ0MjZaMCExDTALBgNVBAoMBHN2Y2QxEDAOBgNVBAMMB3Jv',
  'b3RAaGgwdjAQBgcqhkjOPQIBBgUrgQQAIgNiAAT12IHTnaUnpphnZbgrgH+ABqZa',
  'TduM5scaaRrUGf+SSIlmLSDpErOs/80Q/wb1aqFBwE47cCVpi4uupfBBihOgPES6',
  'KUccqayg4mp+nrG6LkNw9itbad/I4JYoFV9KzOWjgYcwgYQwDAYDVR0TAQH/BAIw',
  'ADAOBgNVHQ8BAf8EBAMCBaAwEwYDVR0lBAwwCgYIKwYBBQUHAwEwMAYDVR0RBCkw',
  'J4ICaGiCCWxvY2FsaG9zdIcEfwAAAYcQAAAAAAAAAAAAAAAAAAAAATAdBgNVHQ4E',
  'FgQUmijQIkvkjn4dM2uI/R/TL4iPJ6AwCgYIKoZIzj0EAwMDaQAwZgIxAJB+cfw0',
  '3Kl6mitfWcbXtRWEMume5I1TH8WUObhrfaI5MdziKnCzQ6+ijtpQu0qFwwIxANfJ',
  '20JmAEjnhzzXGeEKJ04m4i/cR9lSwPZW/eCviPkvIYJrvy6mk0oWFBfLX2v06A==',
  '-----END CERTIFICATE-----',
].join('\n');
const body = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
const fingerprint = new X509Certificate(PEM).fingerprint256.replaceAll(':', '').toLowerCase();

test('a certificate is read from a PEM, or from its bare base64 body, with or without line breaks', () => {
  assert.equal(body(PEM).length % 64, 0, 'the fixture is the case that broke');
  for (const input of [
    PEM,
    `\n${PEM}\n`,
    body(PEM),
    body(PEM).replace(/(.{64})/g, '$1\n'),
    body(PEM).replace(/(.{76})/g, '$1\r\n'),
  ]) {
    const got = parseCertificate(input);
    assert.equal(got.fingerprint, fingerprint);
    assert.equal(
      new X509Certificate(got.pem).fingerprint256,
      new X509Certificate(PEM).fingerprint256,
      'a normalized PEM of the same certificate',
    );
  }
});

test("what is not a certificate is refused in the spec's words", () => {
  for (const input of [
    '',
    'not a certificate',
    body(PEM).slice(0, 200),
    `${body(PEM)}!`,
    '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
  ]) {
    assert.throws(
      () => parseCertificate(input),
      (e: unknown) => e instanceof ValidationError && /Invalid certificate/.test(e.message),
      JSON.stringify(input.slice(0, 20)),
    );
  }
});
