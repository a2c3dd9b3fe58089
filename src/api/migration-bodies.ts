import * as v from 'valibot';
import { ValidationError } from '../desired/errors.ts';
import { optionalString, stringMap } from './body.ts';

/** `target` of a migration source's POST (push mode): the sink's operation, its secrets and certificate. */
export const MigrationTarget = v.optional(
  v.object({ operation: optionalString, secrets: v.optional(stringMap), certificate: optionalString }),
);

/** The source role's `target`, when the request gave one (push mode: svcd dials the sink). */
export function targetOf(t: v.InferOutput<typeof MigrationTarget>) {
  if (!t) return {};
  return {
    target: {
      operation: t.operation ?? '',
      secrets: t.secrets ?? {},
      ...(t.certificate ? { certificate: t.certificate } : {}),
    },
  };
}

/** A sink's `source.mode`: pull (the default) or push; relay is push seen from the sink. */
export function migrationMode(mode: string | undefined): 'pull' | 'push' {
  const m = mode || 'pull';
  if (m !== 'pull' && m !== 'push')
    throw new ValidationError(`Migration source mode "${m}" is not supported (pull or push)`);
  return m;
}

/** The other server's operation as a sink's source names it (pull mode). */
export function pullSource(s: {
  operation?: string | undefined;
  secrets?: Record<string, string> | undefined;
  certificate?: string | undefined;
}) {
  return {
    ...(s.operation ? { operation: s.operation } : {}),
    ...(s.secrets ? { secrets: s.secrets } : {}),
    ...(s.certificate ? { certificate: s.certificate } : {}),
  };
}
