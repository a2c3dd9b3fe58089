import type { OperationRow } from '../desired/schema/index.ts';
import { ValidationError } from '../desired/errors.ts';
import type { OperationSpec } from '../operations/index.ts';
import type { ApiDeps } from './deps.ts';

/**
 * An async request that cannot apply, answered as LXD answers it: 202 with an operation that ends at
 * once as Failure (status_code 400) with `message` as its `err`. Nothing else is written: no desired
 * state, no generation. The operation is answered from memory and its row written with its end.
 */
export function refusedOperation(
  deps: Pick<ApiDeps, 'ops'>,
  spec: Omit<OperationSpec, 'target'>,
  message: string,
): Promise<OperationRow> {
  return deps.ops.startTask(
    spec,
    async () => {
      throw new ValidationError(message);
    },
    { deferInsert: true },
  );
}
