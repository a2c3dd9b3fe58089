import type { DbOrTx } from '../../db/types.ts';
import type { ContainerWithPool } from '../../desired/container-pools.ts';
import type { ImageStore } from '../images/create-image-store.ts';
import type { StorageDriver } from '../storage/types.ts';
import { createContainerBackupsHost } from './container-backups-host.ts';
import { createContainerConsoleHost } from './container-console-host.ts';
import { createContainerExecHost } from './container-exec-host.ts';
import { createContainerFilesHost } from './container-files-host.ts';
import { createContainerLogsHost } from './container-logs-host.ts';
import { createContainerMetadataHost } from './container-metadata-host.ts';
import { createContainerPublishHost } from './container-publish-host.ts';
import { createLocateContainer } from './locate-container.ts';
import { createVolumePaths } from './volume-paths.ts';

export interface ContainerHostDeps {
  db: DbOrTx;
  stateDir: string;
  node: string;
  driverFor(name: string): StorageDriver;
  /** Where published images are packed. */
  images: ImageStore;
  /** desired state's read of a container with its pool (host code never queries itself). */
  readContainerWithPool: (db: DbOrTx, project: string, name: string) => Promise<ContainerWithPool>;
}

/**
 * The host side of the containers' imperative API endpoints (src/api/host-service.ts ContainerHost),
 * created once per agent: its caches live as long as it does.
 */
export function createContainerHost({
  db,
  stateDir,
  node,
  driverFor,
  images,
  readContainerWithPool,
}: ContainerHostDeps) {
  const paths = createVolumePaths({ stateDir, node, driverFor });
  const locate = createLocateContainer({ db, paths, readContainerWithPool });
  return {
    locate,
    files: createContainerFilesHost({ stateDir }),
    exec: createContainerExecHost({ stateDir }),
    console: createContainerConsoleHost({ stateDir }),
    logs: createContainerLogsHost({ stateDir }),
    backups: createContainerBackupsHost({ stateDir, paths }),
    metadata: createContainerMetadataHost({ locate }),
    publish: createContainerPublishHost({ store: images, paths }),
  };
}
