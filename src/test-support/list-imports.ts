/** The static imports of a module's source, for the tests that guard the layers' import rules. */

export interface ImportStatement {
  source: string;
  /** `import type {...}`, or every named binding marked `type`. */
  typeOnly: boolean;
  text: string;
}

/** The static imports and re-exports of a module's source (pure). */
export function listImports(code: string): ImportStatement[] {
  const out: ImportStatement[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";()=]*?)\s*from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
  for (const m of code.matchAll(re)) {
    if (m[5] !== undefined) {
      out.push({ source: m[5], typeOnly: false, text: m[0].trim() });
      continue;
    }
    const clause = m[3] ?? '';
    const named = /^\{([^}]*)\}$/.exec(clause.trim());
    const allTyped =
      named !== null &&
      named[1]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .every((s) => s.startsWith('type '));
    out.push({ source: m[4]!, typeOnly: m[2] !== undefined || allTyped, text: m[0].trim() });
  }
  // Dynamic imports and `import('...')` types name a module too.
  for (const m of code.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g))
    out.push({ source: m[1]!, typeOnly: false, text: m[0] });
  return out;
}
