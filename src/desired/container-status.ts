import type { ContainerRuntimeRow } from './schema/index.ts';
import { StatusCode } from '../operations/status.ts';

/** LXC's state word → the spec's status text and code. */
export function containerStatus(rt: Pick<ContainerRuntimeRow, 'state'> | undefined): {
  status: string;
  status_code: number;
} {
  switch (rt?.state) {
    case 'RUNNING':
      return { status: 'Running', status_code: StatusCode.Running };
    case 'FROZEN':
      return { status: 'Frozen', status_code: StatusCode.Frozen };
    case 'FREEZING':
      return { status: 'Freezing', status_code: StatusCode.Freezing };
    case 'THAWED':
      return { status: 'Thawed', status_code: StatusCode.Thawed };
    case 'STARTING':
      return { status: 'Starting', status_code: StatusCode.Starting };
    case 'STOPPING':
      return { status: 'Stopping', status_code: StatusCode.Stopping };
    case 'ABORTING':
      return { status: 'Aborting', status_code: StatusCode.Aborting };
    default:
      return { status: 'Stopped', status_code: StatusCode.Stopped };
  }
}
