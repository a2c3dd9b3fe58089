import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import type { ContainerRow, ContainerRuntimeRow, OperationRow, StorageVolumeRow } from '../desired/schema/index.ts';
import type { ReceiveVolumeRequest } from '../migration/receive-volume.ts';
import type { SendVolumeRequest } from '../migration/send-volume.ts';
import type { ReceiveContainerRequest } from '../migration/receive-container.ts';
import type { SendContainerRequest } from '../migration/send-container.ts';
import type { EventBus } from '../events/index.ts';
import type { Operations } from '../operations/index.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import type { ContainerHost, HostInfo, ImageHost, NetworkHost, ServerResources } from './host-service.ts';
import type { ProbeResult } from '../host/storage/driver-catalog.ts';
import type { NicFeatureProbe } from '../desired/containers.ts';
import type { ListenProbe } from '../desired/proxy-checks.ts';
import type { NicHostProbe } from '../desired/devices-nic.ts';
import type { TrustStore } from './trust-store.ts';
import type { ImagePulls } from './image-pulls.ts';
import type { UiSessions } from '../ui/ui-sessions.ts';
import type { UiAssetsSource } from '../ui/ui-assets.ts';
import type { ClusterService } from '../cluster/cluster-service.ts';
import type { ContainerMover } from '../cluster/move-container.ts';
import type { ReceiveMoveRequest } from '../migration/receive-moved-container.ts';

/** What the API needs from the rest of the agent (narrow interfaces; tests pass their own). */
export interface ApiDeps {
  db: Db;
  node: string;
  ops: Operations;
  bus: EventBus;
  trust: TrustStore;
  log: Logger;
  host: HostInfo;
  serverCertificate: { cert: string; fingerprint: string };
  listeners: {
    /** Open, move or close the HTTPS listener; throws a ValidationError when the address cannot be bound. */
    setHttpsAddress(address: string | undefined): Promise<void>;
    /** Open, move or close the debug listener (core.debug_address); throws when the address cannot be bound. */
    setDebugAddress(address: string | undefined): Promise<void>;
    addresses(): string[];
  };
  resources: { get(): Promise<ServerResources> };
  reconcile: { enqueue(kind: string, key: string, reason: string): void };
  convergence: Pick<Convergence, 'wait' | 'watch'>;
  stateDir: string;
  containers: {
    /** The runtime state object of `GET .../state` (status, cpu, memory, network, pid, processes). */
    state(row: ContainerRow, runtime: ContainerRuntimeRow | undefined): Promise<unknown>;
    /** Whether the host can do what a nic key needs (`vlan`), for the 400 at a container write. */
    probeNic?: NicFeatureProbe;
    /** Whether the host can give a proxy's listen address (a bind for a moment, no spawn), for the 400 on one in use. */
    listenProbe?: ListenProbe;
    /** The host's interfaces and SR-IOV answers, for the 400s on macvlan/physical/sriov parents at a container write. */
    nicHost?: NicHostProbe;
  };
  /** The host side of the containers' imperative endpoints (files, exec, console, logs, backups, metadata, publish). */
  containerHost: ContainerHost;
  /** Migration between servers: the source and sink roles of a container (src/migration). */
  migration: {
    sendContainer(ct: ContainerRow, req: SendContainerRequest): Promise<OperationRow>;
    receiveContainer(req: ReceiveContainerRequest): Promise<OperationRow>;
    sendVolume(vol: StorageVolumeRow, req: SendVolumeRequest): Promise<OperationRow>;
    receiveVolume(req: ReceiveVolumeRequest): Promise<OperationRow>;
    /** The receiving member of a move inside the cluster (src/migration/receive-moved-container.ts). */
    receiveMovedContainer(req: ReceiveMoveRequest): Promise<OperationRow>;
  };
  /** Moves of containers between members (`POST /1.0/containers/<name>?target=`); absent when it cannot cluster. */
  moves?: ContainerMover;
  /** The image store (uploads, URL imports, exports). */
  images: ImageHost;
  /** Pulls from other servers and refreshes (src/api/image-pulls.ts; one per daemon: single flight per fingerprint). */
  imagePulls: ImagePulls;
  /** Host interfaces, their state, dnsmasq's leases and feature probes (managed networks). */
  networks: NetworkHost;
  /** The dashboard (src/ui/): its sessions and bundle; without it /ui/ is not served. */
  ui?: { sessions: UiSessions; assets: UiAssetsSource };
  /** Bootstrap, join, members, placement and forwarding (absent: a standalone server that cannot cluster). */
  cluster?: ClusterService;
  storage: {
    /** Can this host run the driver (tools, kernel support)? */
    probeDriver(name: string): Promise<ProbeResult>;
    /** Throws a ValidationError when volumes on this pool cannot have a size limit here. */
    checkVolumeQuota(pool: { name: string; driver: string; config: Record<string, string> }): Promise<void>;
  };
}
