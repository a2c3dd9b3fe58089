/**
 * What the imperative endpoints (files, exec, console, logs, backups, metadata, publish, image
 * files) need from the host: the API reaches the host only through these interfaces, which the
 * agent creates once (src/host/container-host/, src/host/image-host/) and passes in ApiDeps.
 * This is the one file of src/api that names host types (type-only: the shapes of processes, of
 * parsed image and backup files, and of the requests declared beside their implementations, so
 * each is declared once); route files import them from here.
 */
import type { Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { ContainerMetadata } from '../desired/container-metadata.ts';
import type { ContainerRow } from '../desired/schema/index.ts';
import type { BackupConfig, BackupSnapshot } from '../host/backups/backup-config.ts';
import type { BackupRequest } from '../host/container-host/container-backups-host.ts';
import type { ExecCommand } from '../host/container-host/container-exec-host.ts';
import type { PublishRequest } from '../host/container-host/container-publish-host.ts';
import type { ContainerLocation } from '../host/container-host/locate-container.ts';
import type { InteractiveCommand } from '../host/exec.ts';
import type { HostInfo } from '../host/host-info.ts';
import type { HashedFile } from '../host/images/hashed-file.ts';
import type { DownloadProgress, RemoteImageInfo, RemoteImageSource } from '../host/images/remote/remote-protocol.ts';
import type { ImageFiles, InspectedImage } from '../host/images/inspect-image.ts';
import type { PipedAttach, PtyAttach } from '../host/lxc/attach.ts';
import type { ServerResources } from '../host/resources/index.ts';
import type { HostInterface, NetworkFeature, NetworkLease, NetworkStateView } from '../host/network/types.ts';
import type { ProbeResult } from '../host/storage/driver-catalog.ts';

export type { HostInterface, NetworkFeature, NetworkLease, NetworkStateView };
export type {
  BackupRequest,
  ContainerLocation,
  ExecCommand,
  HashedFile,
  HostInfo,
  ImageFiles,
  InspectedImage,
  InteractiveCommand,
  PipedAttach,
  PtyAttach,
  PublishRequest,
  ServerResources,
};

/** A container by its project and name (also one that is gone: its logs stay). */
export interface ContainerName {
  project: string;
  name: string;
}

/** Bytes opened now, served later (a file still growing is served as it was when opened). */
export interface OpenedBytes {
  size: number;
  /** The bytes, once; the stream closes what was opened when it ends. */
  stream(): Readable;
  /** Close without streaming. */
  close(): Promise<void>;
}

export interface FileOwner {
  uid: number;
  gid: number;
  /** Permission bits (07777). */
  mode: number;
}

export type FileEntry =
  | (FileOwner & { type: 'file'; size: number; data: Buffer })
  | (FileOwner & { type: 'file'; size: number; data?: undefined; stream(): Readable })
  | (FileOwner & { type: 'directory'; entries: string[] })
  | (FileOwner & { type: 'symlink'; target: string });

export interface FileWriteRequest {
  uid?: number | undefined;
  gid?: number | undefined;
  mode?: number | undefined;
}

/** A container's filesystem as the container sees it; every path is resolved inside its root. */
export interface ContainerFileSystem {
  read(path: string): Promise<FileEntry>;
  makeDirectory(path: string, req: FileWriteRequest): void;
  makeSymlink(path: string, target: string, req: FileWriteRequest): void;
  write(
    path: string,
    req: FileWriteRequest & { append: boolean },
    body: AsyncIterable<Uint8Array> | Buffer,
  ): Promise<void>;
  remove(path: string): void;
}

export interface ContainerFilesHost {
  /** Bodies up to this size are written in one piece. */
  readonly smallFile: number;
  /**
   * Run `f` on the container's filesystem (its mount namespace when running, else its rootfs), closed
   * afterwards; host errors become domain errors naming `path`.
   */
  withFs<T>(where: ContainerLocation, path: string, f: (fsys: ContainerFileSystem) => Promise<T>): Promise<T>;
}

/** A command ready to start in a running container. */
export interface PreparedExec {
  pty(size: { cols: number; rows: number }): Promise<PtyAttach>;
  piped(): Promise<PipedAttach>;
  /** Without standard input; output to the null device, or appended to new `<record>.stdout|stderr` files in the container's log directory. */
  detached(record: string | undefined): Promise<PipedAttach>;
}

export interface ContainerExecHost {
  /** 400 unless LXC runs the container (asked of the host, not the runtime row, which may lag a start). */
  prepare(ct: ContainerRow, cmd: ExecCommand): Promise<PreparedExec>;
}

export interface ContainerConsoleHost {
  /** The console log (the rotated part, then the current file), opened now; empty when never started. */
  openLog(ct: ContainerName): Promise<OpenedBytes>;
  clearLog(ct: ContainerName): Promise<void>;
  /** 400 unless running or frozen; then how to attach a client to the console. */
  prepare(ct: ContainerRow): Promise<() => InteractiveCommand>;
}

export interface ContainerLogsHost {
  /** Names of the plain files in the container's log directory. */
  list(ct: ContainerName): Promise<string[]>;
  /** Throws a ValidationError for a name that is not a log file name; undefined when absent. */
  open(ct: ContainerName, file: string): Promise<OpenedBytes | undefined>;
  /** Throws a ValidationError for a name that is not a log file name; false when absent. */
  remove(ct: ContainerName, file: string): Promise<boolean>;
}

/** A container's metadata.yaml and templates/, beside its rootfs. */
export interface MetadataFiles {
  read(): Promise<ContainerMetadata>;
  /** Under the file's lock: `check(current)` (may throw), then write `next`. */
  update(check: (current: ContainerMetadata) => void, next: ContainerMetadata): Promise<void>;
  listTemplates(): Promise<string[]>;
  readTemplate(name: string): Promise<Buffer | undefined>;
  writeTemplate(name: string, data: Buffer): Promise<void>;
  removeTemplate(name: string): Promise<boolean>;
}

export interface ContainerMetadataHost {
  readonly maxTemplateBytes: number;
  /** 404 for no such container, 400 while it has no root volume. */
  open(ct: ContainerName): Promise<MetadataFiles>;
}

/** An uploaded backup tarball, every member checked, kept until placed or discarded. */
export interface ReceivedBackup {
  index: { name: string };
  config: BackupConfig;
  snapshots: BackupSnapshot[];
  /** Move it to where the reconciler unpacks it for container `id`; returns that file. */
  place(id: string): Promise<string>;
  discard(): Promise<void>;
}

export interface ContainerBackupsHost {
  /** Pack the backup's tarball (LXD's layout) in place. */
  pack(req: BackupRequest): Promise<void>;
  /** The finished tarball and its file name suffix (`.tar.xz`, `.tar`…); undefined while it is not complete. */
  open(containerId: string, backupId: string): Promise<(OpenedBytes & { extension: string }) | undefined>;
  remove(containerId: string, backupId: string): Promise<void>;
  /** Store and check an uploaded tarball (400 for a bad one; nothing is kept then). */
  receive(body: ReadableStream<Uint8Array>): Promise<ReceivedBackup>;
  /** Remove a placed import file (absent is fine). */
  removeImport(file: string): Promise<void>;
}

export interface ContainerPublishHost {
  /** Pack the container's root volume (or a snapshot's) as a unified image in the image store's temporary files. */
  pack(req: PublishRequest): Promise<ReceivedImage>;
}

/** The host side of the containers' imperative endpoints. */
export interface ContainerHost {
  /** One container's place on this host: one join, the volume path computed in one place. */
  locate(ct: ContainerName): Promise<ContainerLocation>;
  files: ContainerFilesHost;
  exec: ContainerExecHost;
  console: ContainerConsoleHost;
  logs: ContainerLogsHost;
  backups: ContainerBackupsHost;
  metadata: ContainerMetadataHost;
  publish: ContainerPublishHost;
}

export type { RemoteImageSource };

export interface ReceivedImage {
  /** Temporary files in the image store. */
  temp: ImageFiles;
  fingerprint: string;
  size: number;
  inspected: InspectedImage;
}

/** An image's stored files, opened now. */
export interface OpenedImageFiles {
  meta: OpenedBytes & { ext: string };
  rootfs?: (OpenedBytes & { ext: string }) | undefined;
}

/** The image store on this host. */
export interface ImageHost {
  init(): Promise<void>;
  /** Fresh temporary paths for the files of one incoming image. */
  tempFiles(split: boolean): ImageFiles;
  /** A temporary file written while hashing. */
  createHashedFile(path: string, hash: Hash): Promise<HashedFile>;
  inspect(files: ImageFiles, signal?: AbortSignal): Promise<InspectedImage>;
  /** A 400 about the files of an image. */
  invalid(message: string): Error;
  withLock<T>(fingerprint: string, fn: () => Promise<T>): Promise<T>;
  commit(fingerprint: string, temp: ImageFiles): Promise<ImageFiles>;
  discard(temp: ImageFiles): Promise<void>;
  removeFiles(fingerprint: string): Promise<void>;
  /** Open an image's files for export (a HostFailureError when they are missing). */
  open(img: { fingerprint: string; split: boolean }): Promise<OpenedImageFiles>;
  sweep(inUse: (fingerprint: string) => Promise<boolean>): Promise<string[]>;
  /** Images of other servers (src/host/images/remote/): resolve a source, download an image into temporary files. */
  remote: {
    resolve(source: RemoteImageSource, signal: AbortSignal): Promise<RemoteImageInfo>;
    download(
      source: RemoteImageSource,
      image: RemoteImageInfo,
      progress: DownloadProgress,
      signal: AbortSignal,
    ): Promise<ReceivedImage>;
  };
}

/** What the networks API reads of the host (host/network/): its interfaces, their state, leases, and probes. */
export interface NetworkHost {
  /** Every host interface (name and LXD's type word), sorted by name. */
  interfaces(): Promise<HostInterface[]>;
  /** One interface's state, or undefined when it does not exist. Spawns nothing. */
  state(name: string): Promise<NetworkStateView | undefined>;
  /** The dynamic leases dnsmasq holds for a network (its lease file under `dir`). */
  leases(network: { name: string; dir: string }): Promise<NetworkLease[]>;
  /** Whether this host has a feature a network key needs (`missing` names what it lacks: a tool, a kernel module). */
  probe(feature: NetworkFeature): Promise<ProbeResult>;
  /** Subnets the host already uses (its routes and addresses, CIDR form), for `auto` and overlap checks. */
  usedSubnets(): Promise<string[]>;
}
