import { ValidationError } from './errors.ts';
import { BOOL_VALUE } from '../util/parse-bool.ts';

/** A config value checker: returns an error message, or undefined when the value is acceptable. */
export type ValueCheck = (value: string) => string | undefined;

export const isBool: ValueCheck = (v) => (BOOL_VALUE.test(v) ? undefined : 'must be a boolean (true or false)');
export const isInt: ValueCheck = (v) => (/^-?\d+$/.test(v) ? undefined : 'must be an integer');
export const isUint: ValueCheck = (v) => (/^\d+$/.test(v) ? undefined : 'must be a non-negative integer');
export const isAny: ValueCheck = () => undefined;
export const oneOf =
  (...choices: string[]): ValueCheck =>
  (v) =>
    choices.includes(v) ? undefined : `must be one of ${choices.join(', ')}`;

const SIZE = /^(\d+(\.\d+)?)\s*(B|kB|KB|MB|GB|TB|PB|EB|KiB|MiB|GiB|TiB|PiB|EiB)?$/;
export const isSize: ValueCheck = (v) => (SIZE.test(v) ? undefined : 'must be a size such as 512MiB or 10GB');
/** Memory limit: a size or a percentage. */
export const isSizeOrPercent: ValueCheck = (v) => (/^\d+(\.\d+)?%$/.test(v) ? undefined : isSize(v));

export interface KeyTable {
  exact: Record<string, ValueCheck>;
  /** Namespaces (`user.`, `environment.`...) where any suffix is allowed. */
  prefixes: Record<string, ValueCheck>;
  /** Keys only svcd writes (`volatile.*`): readable, refused on input. */
  readOnlyPrefixes?: string[];
  /** Checks across keys (settings that contradict each other), run after every key passed; returns an error message. */
  crossCheck?: (config: Record<string, string>) => string | undefined;
}

/**
 * Validate a config map against a key table. Throws a ValidationError naming the first bad key.
 * Keys under readOnlyPrefixes are refused unless `allowReadOnly` (re-submitting the current
 * volatile values unchanged, as `lxc config edit` does, is the caller's decision).
 */
export function validateConfig(what: string, config: Record<string, string>, table: KeyTable): void {
  for (const [key, value] of Object.entries(config)) {
    if (table.readOnlyPrefixes?.some((p) => key.startsWith(p)))
      throw new ValidationError(`${what} config key "${key}" is read-only`);
    const check =
      table.exact[key] ?? Object.entries(table.prefixes).find(([p]) => key.startsWith(p) && key.length > p.length)?.[1];
    if (!check) throw new ValidationError(`Unknown ${what} config key "${key}"`);
    const err = check(value);
    if (err) throw new ValidationError(`Invalid value for ${what} config key "${key}": ${err}`);
  }
  const err = table.crossCheck?.(config);
  if (err) throw new ValidationError(`Invalid ${what} config: ${err}`);
}

/** PATCH semantics for config maps: given keys replace, a key set to "" is removed. */
export function mergeConfig(
  cur: Record<string, string>,
  patch: Record<string, string> | undefined,
): Record<string, string> {
  const out = { ...cur, ...patch };
  for (const [k, v] of Object.entries(out)) if (v === '') delete out[k];
  return out;
}
