import { nameProblem } from '../util/entity-names.ts';
import { ValidationError } from './errors.ts';

/** An entity name (the rule: util/entity-names.ts), or a ValidationError saying what is wrong with it. */
export function validateName(kind: string, name: unknown): string {
  const problem = nameProblem(kind, name);
  if (problem) throw new ValidationError(problem);
  return name as string;
}

/** Container names are host names: letters, digits and dashes, not starting with a digit or dash (spec: ≤64 ASCII, no / : ,). */
export function validateContainerName(name: unknown): string {
  validateName('Container', name);
  const n = name as string;
  if (!/^[A-Za-z][A-Za-z0-9-]*$/.test(n) || n.endsWith('-'))
    throw new ValidationError(
      `Container name ${JSON.stringify(n)} must be letters, digits and dashes, start with a letter and not end with a dash`,
    );
  return n;
}
