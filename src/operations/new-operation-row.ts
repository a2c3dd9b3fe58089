import { randomUUID } from 'node:crypto';
import type { OperationRow } from '../desired/schema/index.ts';

export interface OperationSpec {
  /** A uuid chosen by the caller (to issue websocket secrets before the operation is announced); default a fresh one. */
  id?: string;
  class: 'task' | 'websocket' | 'token';
  description: string;
  project: string;
  resources?: Record<string, string[]>;
  metadata?: Record<string, unknown>;
  mayCancel?: boolean;
  /** For desired writes: the reconcile that settles this operation. */
  target?: { kind: string; key: string; generation: number };
  /** Override the default deadline (ms from now); 0 = none. */
  deadlineMs?: number;
}

/** Where and when an operation starts, and the deadline of one that waits for a reconcile. */
export interface NewRowContext {
  now: Date;
  node: string;
  /** Default time a desired-write operation (one with a target) waits for convergence. */
  defaultDeadlineMs: number;
}

/** The row an operation starts as (what the insert writes). */
export function newOperationRow(
  spec: OperationSpec,
  statusCode: number,
  { now, node, defaultDeadlineMs }: NewRowContext,
): OperationRow {
  const deadlineMs = spec.deadlineMs ?? (spec.target ? defaultDeadlineMs : 0);
  return {
    id: spec.id ?? randomUUID(),
    class: spec.class,
    description: spec.description,
    statusCode,
    resources: spec.resources ?? {},
    metadata: spec.metadata ?? {},
    mayCancel: spec.mayCancel ?? false,
    err: '',
    project: spec.project,
    node,
    targetKind: spec.target?.kind ?? null,
    targetKey: spec.target?.key ?? null,
    targetGeneration: spec.target?.generation ?? null,
    deadlineAt: deadlineMs > 0 ? new Date(now.getTime() + deadlineMs) : null,
    createdAt: now,
    updatedAt: now,
  };
}
