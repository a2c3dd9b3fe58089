import { HttpError } from './errors.ts';

type Node =
  | { op: 'cmp'; key: string; neg: boolean; value: string }
  | { op: 'and' | 'or'; left: Node; right: Node }
  | { op: 'not'; inner: Node };

/** Split a filter into words, honouring single and double quotes. */
function tokenize(s: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|(\S+))/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) && m[0].trim() !== '') out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

/** Look a dotted key up in an object; map keys may themselves contain dots (`config.user.foo`). */
export function lookup(obj: unknown, key: string): unknown {
  if (key === '') return obj;
  if (!obj || typeof obj !== 'object') return undefined;
  const rec = obj as Record<string, unknown>;
  if (key in rec) return rec[key];
  const parts = key.split('.');
  for (let i = parts.length - 1; i >= 1; i--) {
    const head = parts.slice(0, i).join('.');
    if (head in rec) return lookup(rec[head], parts.slice(i).join('.'));
  }
  return undefined;
}

/**
 * Compile `filter=` (extension api_filtering): clauses `key eq value` / `key ne value`, joined with
 * `and` / `or`, optionally prefixed by `not`; comparison is case-insensitive. An empty filter is none.
 */
export function compileFilter(raw: string | undefined): ((obj: unknown) => boolean) | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const toks = tokenize(raw);
  let pos = 0;
  const bad = (why: string): never => {
    throw new HttpError(400, `Invalid filter "${raw}": ${why}`);
  };
  const term = (): Node => {
    if (toks[pos]?.toLowerCase() === 'not') {
      pos++;
      return { op: 'not', inner: term() };
    }
    const key = toks[pos++];
    const op = toks[pos++]?.toLowerCase();
    const value = toks[pos++];
    if (key === undefined || op === undefined || value === undefined) bad('expected "key eq value"');
    if (op !== 'eq' && op !== 'ne') bad(`unsupported operator "${op}" (use eq or ne)`);
    return { op: 'cmp', key: key!, neg: op === 'ne', value: value! };
  };
  const expr = (): Node => {
    let left = term();
    while (pos < toks.length) {
      const j = toks[pos++]?.toLowerCase();
      if (j !== 'and' && j !== 'or') bad(`expected "and" or "or", got "${j}"`);
      left = { op: j as 'and' | 'or', left, right: term() };
    }
    return left;
  };
  const tree = expr();
  const evaluate = (n: Node, obj: unknown): boolean => {
    switch (n.op) {
      case 'not':
        return !evaluate(n.inner, obj);
      case 'and':
        return evaluate(n.left, obj) && evaluate(n.right, obj);
      case 'or':
        return evaluate(n.left, obj) || evaluate(n.right, obj);
      case 'cmp': {
        const v = lookup(obj, n.key);
        const eq = v !== undefined && v !== null && String(v).toLowerCase() === n.value.toLowerCase();
        return n.neg ? !eq : eq;
      }
    }
  };
  return (obj) => evaluate(tree, obj);
}
