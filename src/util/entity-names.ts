/**
 * Entity names (profiles, projects, pools, volumes, networks, aliases, snapshots...): 1..64 printable ASCII
 * characters, none of the characters that break URLs, shells or file paths, and never `.`/`..`. Pure, so
 * that desired state's validation and the host's reading of a backup apply the same rule.
 */
const FORBIDDEN = /[\s/\\:,?#%"'`<>|*{}[\]^~;&$]/;

/** What is wrong with `name` as a name of `kind`, or undefined when it is a valid name. */
export function nameProblem(kind: string, name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return `${kind} name is required`;
  if (name.length > 64) return `${kind} name is too long (at most 64 characters)`;
  if (!/^[\x21-\x7e]+$/.test(name)) return `${kind} name must be printable ASCII without spaces`;
  if (FORBIDDEN.test(name)) return `${kind} name ${JSON.stringify(name)} contains a character that is not allowed`;
  if (name === '.' || name === '..') return `${kind} name cannot be "${name}"`;
  return undefined;
}
