/**
 * The simplestreams protocol client against the simplestreams test server on 127.0.0.1 (HTTPS,
 * self-signed, pinned): resolve by alias and fingerprint, download each item kind into files the
 * image store accepts, one stream fetch for 50 concurrent resolves, alias moves, and the failure
 * paths (bad hash, cut connection, wrong or missing pinned certificate, missing file). Also Debian's
 * lxc client listing the same server as a `--protocol simplestreams` remote.
 */
import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sha256Files } from '../../src/host/images/hashed-file.ts';
import { inspectImage } from '../../src/host/images/inspect-image.ts';
import { createSimplestreamsProtocol } from '../../src/host/images/remote/simplestreams-protocol.ts';
import { generateCertificate } from '../../src/tls/ensure-server-certificate.ts';
import { BUSYBOX } from '../support/busybox-image.ts';
import { lxcCli } from '../support/lxc-cli.ts';
import { startSimplestreamsServer, type SimplestreamsServer } from '../support/simplestreams-server.ts';

const skip = await access(BUSYBOX).then(
  () => (process.getuid?.() === 0 ? undefined : 'building the image needs root (root-owned files)'),
  () => `${BUSYBOX} is missing`,
);
const ARCHS = process.arch === 'x64' ? ['x86_64', 'i686'] : process.arch === 'arm64' ? ['aarch64', 'armv7l'] : [];
const never = new AbortController().signal;
const noProgress = () => {};

describe('simplestreams protocol client', { skip }, () => {
  let ss: SimplestreamsServer;
  let tmp = '';
  let n = 0;
  const fresh = async () => {
    const d = path.join(tmp, `dl-${++n}`);
    await mkdir(d);
    return { dir: d, meta: path.join(d, 'meta'), rootfs: path.join(d, 'rootfs') };
  };
  before(async () => {
    ss = await startSimplestreamsServer();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'svcd-ss-client-'));
  });
  after(async () => {
    await ss?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('by alias: the squashfs split image of the newest version, downloaded and verified into files the store accepts', async () => {
    const proto = createSimplestreamsProtocol();
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox', certificate: ss.certificate };
    const info = await proto.resolve(src, ARCHS, never);
    const v = ss.latest();
    assert.equal(info.fingerprint, v.fingerprints.squashfs);
    assert.equal(info.split, true);
    assert.equal(info.architecture, ARCHS[0]);
    assert.equal(info.properties.serial, v.serial);
    assert.equal(info.properties.type, 'squashfs');
    assert.equal(info.size, v.files.meta!.size + v.files.squashfs!.size);
    assert.ok(info.aliases.some((a) => a.name === 'busybox/test'));
    const into = await fresh();
    let last = 0;
    await proto.download(
      src,
      info,
      into,
      (got, total) => {
        assert.equal(total, info.size);
        last = got;
      },
      never,
    );
    assert.equal(last, info.size);
    assert.equal(await sha256Files([into.meta, into.rootfs]), info.fingerprint);
    const inspected = await inspectImage(into);
    assert.equal(inspected.rootfsFormat, 'squashfs');
    assert.equal(inspected.metadata.properties.os, 'busybox');
    proto.close();
  });

  it('by fingerprint (a prefix too): the unified tarball and the root.tar.xz split image', async () => {
    const proto = createSimplestreamsProtocol();
    const v = ss.latest();
    const base = { server: ss.url, protocol: 'simplestreams' as const, certificate: ss.certificate };
    const uni = await proto.resolve({ ...base, fingerprint: v.fingerprints.unified!.slice(0, 12) }, ARCHS, never);
    assert.equal(uni.fingerprint, v.fingerprints.unified);
    assert.equal(uni.split, false);
    assert.equal(uni.filename, 'lxd_combined.tar.gz');
    const a = await fresh();
    await proto.download(base, uni, { meta: a.meta }, noProgress, never);
    assert.equal(await sha256Files([a.meta]), uni.fingerprint);
    assert.equal((await inspectImage({ meta: a.meta })).metaFormat, 'gzip');
    const xz = await proto.resolve({ ...base, fingerprint: v.fingerprints.rootxz! }, ARCHS, never);
    const b = await fresh();
    await proto.download(base, xz, b, noProgress, never);
    assert.equal((await inspectImage(b)).rootfsFormat, 'xz');
    proto.close();
  });

  it('50 concurrent resolves fetch index.json and the products file once', async () => {
    const proto = createSimplestreamsProtocol();
    ss.resetCounts();
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox', certificate: ss.certificate };
    const all = await Promise.all(Array.from({ length: 50 }, () => proto.resolve(src, ARCHS, never)));
    assert.equal(new Set(all.map((i) => i.fingerprint)).size, 1);
    assert.equal(ss.requests('/streams/v1/index.json'), 1);
    assert.equal(ss.requests('/streams/v1/images.json'), 1);
    proto.close();
  });

  it('the alias moves to a newly published version once the catalog TTL has passed', async () => {
    let clock = 0;
    const proto = createSimplestreamsProtocol({ catalogTtlMs: 1000, now: () => clock });
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox', certificate: ss.certificate };
    const before = await proto.resolve(src, ARCHS, never);
    const v2 = await ss.publish();
    assert.equal(
      (await proto.resolve(src, ARCHS, never)).fingerprint,
      before.fingerprint,
      'within the TTL: the cached catalog',
    );
    clock = 1001;
    const after = await proto.resolve(src, ARCHS, never);
    assert.equal(after.fingerprint, v2.fingerprints.squashfs);
    assert.notEqual(after.fingerprint, before.fingerprint);
    assert.equal(
      (await proto.resolve({ ...src, alias: undefined, fingerprint: before.fingerprint }, ARCHS, never)).fingerprint,
      before.fingerprint,
      'the old version stays reachable by fingerprint',
    );
    proto.close();
  });

  it('a corrupted file fails with a SHA-256 mismatch naming the URL', async () => {
    const proto = createSimplestreamsProtocol();
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox', certificate: ss.certificate };
    const info = await proto.resolve(src, ARCHS, never);
    const p = `/${ss.latest().files.squashfs!.path}`;
    ss.fault(p, { kind: 'corrupt' });
    try {
      await assert.rejects(
        proto.download(src, info, await fresh(), noProgress, never),
        (e: Error) => e.message.includes('SHA-256 mismatch') && e.message.includes(`${ss.url}${p}`),
      );
    } finally {
      ss.fault(p, undefined);
      proto.close();
    }
  });

  it('a connection cut midway fails the download with a clear message', async () => {
    const proto = createSimplestreamsProtocol();
    const v = ss.latest();
    const src = {
      server: ss.url,
      protocol: 'simplestreams' as const,
      fingerprint: v.fingerprints.unified,
      certificate: ss.certificate,
    };
    const info = await proto.resolve(src, ARCHS, never);
    const p = `/${v.files.unified!.path}`;
    ss.fault(p, { kind: 'cut', afterBytes: 70_000 });
    try {
      await assert.rejects(proto.download(src, info, { meta: (await fresh()).meta }, noProgress, never), (e: Error) => {
        assert.match(
          e.message,
          new RegExp(`Download of ${ss.url}${p} (failed after \\d+ bytes: the connection was dropped|was cut short)`),
        );
        return true;
      });
    } finally {
      ss.fault(p, undefined);
      proto.close();
    }
  });

  it('a missing file fails with its URL and status', async () => {
    const proto = createSimplestreamsProtocol();
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox', certificate: ss.certificate };
    const info = await proto.resolve(src, ARCHS, never);
    const p = `/${ss.latest().files.meta!.path}`;
    ss.fault(p, { kind: 'status', status: 404 });
    try {
      await assert.rejects(
        proto.download(src, info, await fresh(), noProgress, never),
        new RegExp(`Failed to fetch ${ss.url}${p}: 404`),
      );
    } finally {
      ss.fault(p, undefined);
      proto.close();
    }
  });

  it('a wrong pinned certificate, or none (system roots), is refused before anything is fetched', async () => {
    const proto = createSimplestreamsProtocol();
    ss.resetCounts();
    const other = (await generateCertificate('127.0.0.1', { serverAuth: true })).cert;
    const src = { server: ss.url, protocol: 'simplestreams' as const, alias: 'busybox' };
    await assert.rejects(
      proto.resolve({ ...src, certificate: other }, ARCHS, never),
      new RegExp(`The certificate of ${ss.url} does not match the pinned certificate`),
    );
    await assert.rejects(
      proto.resolve(src, ARCHS, never),
      new RegExp(`The certificate of ${ss.url} is not trusted by the system CA roots`),
    );
    assert.equal(ss.requests('/streams/v1/index.json'), 0);
    await assert.rejects(
      proto.resolve({ ...src, alias: 'nope', certificate: ss.certificate }, ARCHS, never),
      new RegExp(`Alias "nope" not found on ${ss.url}`),
    );
    proto.close();
  });

  it("Debian's lxc lists the server as a simplestreams remote (its certificate in servercerts/)", async () => {
    const lxc = await lxcCli(path.join(tmp, 'no-daemon'));
    try {
      await lxc.ok(['remote', 'add', 'ss', ss.url, '--protocol', 'simplestreams', '--public']);
      await mkdir(path.join(lxc.conf, 'servercerts'), { recursive: true });
      await writeFile(path.join(lxc.conf, 'servercerts', 'ss.crt'), ss.certificate);
      const rows = JSON.parse(await lxc.ok(['image', 'list', 'ss:', '--format', 'json'])) as {
        fingerprint: string;
        aliases: { name: string }[];
        properties: Record<string, string>;
      }[];
      const v = ss.latest();
      const fps = rows.map((r) => r.fingerprint);
      for (const fp of Object.values(v.fingerprints)) assert.ok(fps.includes(fp), `${fp} listed`);
      assert.ok(
        rows.some((r) => r.aliases.some((a) => a.name === 'busybox')),
        'the alias is listed',
      );
      const info = await lxc.ok(['image', 'info', 'ss:busybox']);
      assert.match(info, new RegExp(`Fingerprint: (${Object.values(v.fingerprints).join('|')})`));
      assert.ok((await readdir(lxc.conf)).includes('config.yml'));
    } finally {
      await lxc.cleanup();
    }
  });
});
