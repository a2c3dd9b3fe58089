import type { ImageStore } from '../host/images/create-image-store.ts';
import type { ImageFiles } from '../host/images/inspect-image.ts';
import { createRemoteImages } from '../host/images/remote/download-remote-image.ts';
import { createProtocolRegistry } from '../host/images/remote/protocol-registry.ts';
import { createSvcProtocol } from '../host/images/remote/svc-protocol.ts';
import type { ClusterService } from './cluster-service.ts';

/**
 * An image imported through one member is usable on every member: a member whose store lacks its files
 * fetches them from another online member (its /1.0/images/<fp>/export, with the cluster certificate,
 * which every member presents and trusts), verifies the fingerprint and keeps them.
 */
export function createMemberImages(deps: {
  node: string;
  cluster: Pick<ClusterService, 'certificate' | 'members'>;
  store: ImageStore;
  architectures: string[];
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
}) {
  const has = (files: ImageFiles) =>
    deps.store.sizes(files).then(
      () => true,
      () => false,
    );
  return {
    /** The image's files here: already in the store, or fetched from a member that has them. */
    async ensureLocal(fingerprint: string, split: boolean, signal?: AbortSignal): Promise<ImageFiles> {
      const files = deps.store.files(fingerprint, split);
      const cert = deps.cluster.certificate();
      if (!cert || (await has(files))) return files;
      const remote = createRemoteImages({
        protocols: createProtocolRegistry({ svc: createSvcProtocol({ clientCert: cert }) }),
        store: deps.store,
        architectures: deps.architectures,
      });
      const sig = signal ?? AbortSignal.timeout(600_000);
      for (const m of (await deps.cluster.members()).filter((x) => x.online && x.name !== deps.node)) {
        const source = {
          server: `https://${m.address}`,
          protocol: 'svc' as const,
          fingerprint,
          certificate: cert.cert,
        };
        try {
          const info = await remote.resolve(source, sig);
          const got = await remote.download(source, info, () => {}, sig);
          await deps.store.withLock(fingerprint, () => deps.store.commit(fingerprint, got.temp));
          deps.log.info({ fingerprint, from: m.name }, 'image fetched from another member');
          return deps.store.files(fingerprint, got.temp.rootfs !== undefined);
        } catch (err) {
          deps.log.warn({ err, fingerprint, from: m.name }, 'cannot fetch the image from this member; trying the next');
        }
      }
      return files;
    },
  };
}
