import type { OperationRow } from '../desired/schema/index.ts';
import { statusName } from './status.ts';

export interface OperationJson {
  id: string;
  class: string;
  description: string;
  created_at: string;
  updated_at: string;
  status: string;
  status_code: number;
  resources: Record<string, string[]>;
  metadata: Record<string, unknown>;
  may_cancel: boolean;
  err: string;
  location: string;
}

/** Row → the API's operation object. */
export function renderOperation(row: OperationRow): OperationJson {
  return {
    id: row.id,
    class: row.class,
    description: row.description,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    status: statusName(row.statusCode),
    status_code: row.statusCode,
    resources: row.resources,
    metadata: row.metadata,
    may_cancel: row.mayCancel,
    err: row.err,
    location: row.node,
  };
}

export function operationUrl(id: string): string {
  return `/1.0/operations/${id}`;
}
