import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { CONTAINER_KIND } from './containers.ts';
import { containers, reconcileStatus } from './schema/index.ts';

export interface ContainerConvergence {
  name: string;
  /** The desired power state: running, stopped or frozen. */
  desired: string;
  generation: number;
  observed_generation: number;
  /** converged: the host has the latest generation; failed: the reconciler's last try failed; else converging. */
  convergence: 'converged' | 'converging' | 'failed';
  error: string;
  /** A failure a retry cannot help (the reconciler stopped trying until the next desired write). */
  terminal: boolean;
}

/** The verdict on one container's desired and reconcile rows (pure). */
export function convergenceOf(
  generation: number,
  status: { observedGeneration: number; lastError: string } | undefined,
): ContainerConvergence['convergence'] {
  if (status?.lastError) return 'failed';
  return (status?.observedGeneration ?? 0) >= generation ? 'converged' : 'converging';
}

/**
 * What is asked of each container of a project and how far the host has come, in one query: the
 * desired power state and generation against the reconciler's observed generation and last error
 * (one container's with `name`).
 */
export async function listContainerConvergence(
  db: DbOrTx,
  project: string,
  name?: string,
): Promise<ContainerConvergence[]> {
  const rows = await db
    .select({
      name: containers.name,
      power: containers.power,
      generation: containers.generation,
      observedGeneration: reconcileStatus.observedGeneration,
      lastError: reconcileStatus.lastError,
      terminal: reconcileStatus.terminal,
    })
    .from(containers)
    .leftJoin(
      reconcileStatus,
      and(eq(reconcileStatus.kind, CONTAINER_KIND), sql`${reconcileStatus.key} = ${containers.id}::text`),
    )
    .where(
      and(
        eq(containers.project, project),
        isNull(containers.deletingAt),
        name === undefined ? undefined : eq(containers.name, name),
      ),
    )
    .orderBy(asc(containers.name));
  return rows.map((r) => {
    const status =
      r.observedGeneration === null
        ? undefined
        : { observedGeneration: r.observedGeneration, lastError: r.lastError ?? '' };
    return {
      name: r.name,
      desired: r.power,
      generation: r.generation,
      observed_generation: status?.observedGeneration ?? 0,
      convergence: convergenceOf(r.generation, status),
      error: status?.lastError ?? '',
      terminal: !!r.terminal,
    };
  });
}
