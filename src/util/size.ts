/** Byte sizes as users write them: `5GiB` (binary), `500MB` (decimal), `1073741824` (bytes). */

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  pb: 1e15,
  eb: 1e18,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  pib: 2 ** 50,
  eib: 2 ** 60,
};

/**
 * Parse a size into bytes. Units are case-insensitive: `B`, `kB`/`MB`/`GB`/`TB`/`PB`/`EB` are powers of
 * 1000, `KiB`/`MiB`/`GiB`/`TiB`/`PiB`/`EiB` powers of 1024. A fraction is allowed (`1.5GiB`) and rounded
 * down to whole bytes. Throws a RangeError naming the bad input.
 */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const factor = m ? UNITS[(m[2] ?? '').toLowerCase()] : undefined;
  if (!m || factor === undefined) {
    throw new RangeError(
      `invalid size ${JSON.stringify(text)}: expected a number of bytes or a number with a unit such as 500MB or 5GiB`,
    );
  }
  const bytes = Math.floor(Number(m[1]) * factor);
  if (!Number.isSafeInteger(bytes)) throw new RangeError(`invalid size ${JSON.stringify(text)}: too large`);
  return bytes;
}

/** `""`/absent/`0` mean "no limit" (undefined); anything else is parsed. */
export function parseOptionalSize(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const bytes = parseSize(text);
  return bytes === 0 ? undefined : bytes;
}

/** Bytes in the largest binary unit that divides them exactly (`314572800` → `300MiB`), for messages. */
export function formatSize(bytes: number): string {
  for (const unit of ['EiB', 'PiB', 'TiB', 'GiB', 'MiB', 'KiB'] as const) {
    const factor = UNITS[unit.toLowerCase()] ?? 1;
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes}B`;
}
