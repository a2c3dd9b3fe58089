import { stat } from 'node:fs/promises';
import type { ImageStore } from '../create-image-store.ts';
import { inspectImage, type ImageFiles, type InspectedImage } from '../inspect-image.ts';
import type { ProtocolRegistry } from './protocol-registry.ts';
import type { DownloadProgress, RemoteImageInfo, RemoteImageSource } from './remote-protocol.ts';

/** A downloaded, verified, inspected image in the store's temporary files (the caller commits or discards them). */
export interface DownloadedImage {
  temp: ImageFiles;
  fingerprint: string;
  size: number;
  inspected: InspectedImage;
}

const sizeOf = (p: string) =>
  stat(p).then(
    (s) => s.size,
    () => undefined,
  );

/**
 * The host side of a pull: resolve a source with its protocol client, and download an image into
 * the store's temporary files. Both temporary paths are offered to the client (a svc export tells
 * whether it is split only when it arrives); what was written decides. On any failure the
 * temporary files are removed: nothing half-stored.
 */
export function createRemoteImages(deps: {
  protocols: ProtocolRegistry;
  store: Pick<ImageStore, 'init' | 'tempFiles' | 'discard'>;
  architectures: string[];
}) {
  return {
    resolve: (source: RemoteImageSource, signal: AbortSignal): Promise<RemoteImageInfo> =>
      deps.protocols.get(source.protocol).resolve(source, deps.architectures, signal),

    async download(
      source: RemoteImageSource,
      image: RemoteImageInfo,
      progress: DownloadProgress,
      signal: AbortSignal,
    ): Promise<DownloadedImage> {
      const protocol = deps.protocols.get(source.protocol);
      await deps.store.init();
      const temp = deps.store.tempFiles(true);
      try {
        await protocol.download(source, image, temp, progress, signal);
        const rootfsSize = await sizeOf(temp.rootfs!);
        const files: ImageFiles = rootfsSize === undefined ? { meta: temp.meta } : temp;
        const metaSize = await sizeOf(temp.meta);
        if (metaSize === undefined)
          throw new Error(`Image ${image.fingerprint} from ${source.server}: nothing was downloaded`);
        const inspected = await inspectImage(files, signal);
        return { temp: files, fingerprint: image.fingerprint, size: metaSize + (rootfsSize ?? 0), inspected };
      } catch (e) {
        await deps.store.discard(temp);
        throw e;
      }
    },
  };
}
export type RemoteImages = ReturnType<typeof createRemoteImages>;
