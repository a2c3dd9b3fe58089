import { createHash } from 'node:crypto';
import { containerUrl, splitVolatile } from '../../desired/containers.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { emitLifecycle, type EventBus } from '../../events/index.ts';
import type { FactsRecord } from '../status-settler.ts';

/** What the last lifecycle announcement said about a container (kept in its reconcile facts). */
export interface Announced {
  name: string;
  /** Digest of the user-editable fields (volatile keys left out). */
  spec: string;
}

const sorted = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sorted)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([k, x]) => [k, sorted(x)]),
        )
      : v;

/** Digest of what `PUT /1.0/containers/<name>` changes. Pure. */
export function specDigest(
  c: Pick<ContainerRow, 'description' | 'architecture' | 'ephemeral' | 'profiles' | 'config' | 'devices'>,
): string {
  const spec = {
    description: c.description,
    architecture: c.architecture,
    ephemeral: c.ephemeral,
    profiles: c.profiles,
    config: splitVolatile(c.config).rest,
    devices: c.devices,
  };
  return createHash('sha256')
    .update(JSON.stringify(sorted(spec)))
    .digest('hex');
}

/**
 * The lifecycle events a converged container owes since the last announcement: `created` the
 * first time, `renamed` (context old_name) when its name changed, `updated` when its spec did. Pure.
 */
export function computeAnnouncements(
  prev: Announced | undefined,
  c: ContainerRow,
): { events: { action: string; context?: Record<string, unknown> }[]; next: Announced } {
  const next = { name: c.name, spec: specDigest(c) };
  if (!prev) return { events: [{ action: 'container-created' }], next };
  const events: { action: string; context?: Record<string, unknown> }[] = [];
  if (prev.name !== c.name) events.push({ action: 'container-renamed', context: { old_name: prev.name } });
  if (prev.spec !== next.spec) events.push({ action: 'container-updated' });
  return { events, next };
}

/**
 * After the reconciler converged a container's spec (root volume, LXC config): announce what
 * changed since the last time, and remember it in the reconcile facts (noted: saved when the reconcile
 * ends), so each change is told once (twice only if svcd dies in between).
 */
export function announceConverged(
  deps: { bus?: EventBus | undefined },
  c: ContainerRow,
  record: Pick<FactsRecord<{ announced?: Announced }>, 'facts' | 'note'>,
): void {
  if (!deps.bus) return;
  const { events, next } = computeAnnouncements(record.facts.announced, c);
  if (events.length === 0) return;
  record.facts.announced = next;
  record.note();
  for (const e of events)
    emitLifecycle(deps.bus, {
      action: e.action,
      source: containerUrl(c),
      project: c.project,
      ...(e.context ? { context: e.context } : {}),
    });
}

/** After the reconciler removed a container. */
export function announceDeleted(deps: { bus?: EventBus | undefined }, c: ContainerRow): void {
  if (deps.bus) emitLifecycle(deps.bus, { action: 'container-deleted', source: containerUrl(c), project: c.project });
}
