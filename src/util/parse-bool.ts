/**
 * LXD's rule for a boolean config value: `true`, `1`, `yes` or `on`, in any case, is true; anything else is
 * false. Every layer reads booleans through here, so the rule is written once.
 */

/** The true values as a PostgreSQL regular expression (`~*`), for the few checks done inside a query. */
export const TRUE_VALUE_SQL_PATTERN = '^(true|1|yes|on)$';

const TRUE_VALUE = /^(true|1|yes|on)$/i;

/** Any value LXD accepts for a boolean key (what a validator lets through). */
export const BOOL_VALUE = /^(true|false|1|0|yes|no|on|off)$/i;

/** The value as a boolean; unset or empty is `dflt`. */
export function parseBool(v: string | undefined, dflt = false): boolean {
  if (v === undefined || v === '') return dflt;
  return TRUE_VALUE.test(v);
}

/** The value as a boolean, or undefined when it is unset or empty (for keys whose absence means something). */
export function parseOptionalBool(v: string | undefined): boolean | undefined {
  return v === undefined || v === '' ? undefined : TRUE_VALUE.test(v);
}
