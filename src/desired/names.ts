import { ValidationError } from './errors.ts';

const FORBIDDEN = /[\s/\\:,?#%"'`<>|*{}[\]^~;&$]/;

/**
 * Entity names (profiles, projects, pools, volumes, networks, aliases...): 1..64 printable ASCII
 * characters, none of the characters that break URLs, shells or file paths, and never `.`/`..`.
 */
export function validateName(kind: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new ValidationError(`${kind} name is required`);
  if (name.length > 64) throw new ValidationError(`${kind} name is too long (at most 64 characters)`);
  if (!/^[\x21-\x7e]+$/.test(name)) throw new ValidationError(`${kind} name must be printable ASCII without spaces`);
  if (FORBIDDEN.test(name)) throw new ValidationError(`${kind} name ${JSON.stringify(name)} contains a character that is not allowed`);
  if (name === '.' || name === '..') throw new ValidationError(`${kind} name cannot be "${name}"`);
  return name;
}

/** Container names are host names: letters, digits and dashes, not starting with a digit or dash (spec: ≤64 ASCII, no / : ,). */
export function validateContainerName(name: unknown): string {
  validateName('Container', name);
  const n = name as string;
  if (!/^[A-Za-z][A-Za-z0-9-]*$/.test(n) || n.endsWith('-'))
    throw new ValidationError(`Container name ${JSON.stringify(n)} must be letters, digits and dashes, start with a letter and not end with a dash`);
  return n;
}
