import type { ImageFiles } from '../inspect-image.ts';

/**
 * The contract between the image pull path and the protocol clients. A pull names an
 * image on another server (the spec's source-image dict); a protocol client (`svc`: the other
 * server's /1.0/images API as a guest; `simplestreams`: index.json → products → item) resolves it
 * to one image and downloads its files, verified, into temporary paths of the local image store.
 * The pull path (single flight per fingerprint, progress, commit, cache, refresh) is the same for
 * every protocol.
 */

/** Where an image comes from: the source-image dict, and what an image records as `update_source`. */
export interface RemoteImageSource {
  /** Base URL: `https://host:8443` (svc) or the simplestreams root (where `streams/v1/index.json` is). */
  server: string;
  protocol: RemoteProtocolName;
  /** Exactly one of alias and fingerprint (a fingerprint may be a unique prefix). */
  alias?: string | undefined;
  fingerprint?: string | undefined;
  /** svc only: the secret a client obtained from the source for a private image. */
  secret?: string | undefined;
  /** PEM of the server's certificate: pins it. Without it, the system CA roots apply. */
  certificate?: string | undefined;
}

export type RemoteProtocolName = 'svc' | 'simplestreams';

/** One image as the remote describes it. */
export interface RemoteImageInfo {
  /** Full SHA-256: of the unified tarball, or of metadata then rootfs for a split image. */
  fingerprint: string;
  architecture: string;
  public: boolean;
  properties: Record<string, string>;
  /** The remote's aliases of this image (informative: the pull does not copy them). */
  aliases: { name: string; description: string }[];
  /** The filename the remote exports it under ('' when unknown). */
  filename: string;
  split: boolean;
  /** Bytes to download in all (for progress), 0 when unknown. */
  size: number;
  createdAt?: Date | undefined;
  expiresAt?: Date | undefined;
}

/** Bytes received so far of `total` (0 when unknown). Called often: keep it cheap. */
export type DownloadProgress = (received: number, total: number) => void;

/**
 * A protocol client. It holds no state between calls beyond caches it owns (HTTP agents, a parsed
 * stream index with a short TTL), so that one instance serves the whole daemon.
 */
export interface RemoteProtocol {
  /**
   * Resolve the alias or fingerprint to one image of one of `architectures` (the host's, in order of
   * preference). Not found, ambiguous, a wrong certificate, a TLS or HTTP failure: an Error whose
   * message says which and names the server.
   */
  resolve(source: RemoteImageSource, architectures: string[], signal: AbortSignal): Promise<RemoteImageInfo>;
  /**
   * Download the image's files to `into.meta` (and `into.rootfs` when `image.split`; the caller gives
   * paths that do not exist yet) and verify them: every hash the remote publishes, and the
   * fingerprint. Throws on a dropped connection, a short body or a hash mismatch; the caller removes
   * the temporary files on any throw.
   */
  download(
    source: RemoteImageSource,
    image: RemoteImageInfo,
    into: ImageFiles,
    progress: DownloadProgress,
    signal: AbortSignal,
  ): Promise<void>;
}
