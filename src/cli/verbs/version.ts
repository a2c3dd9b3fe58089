import { readFileSync } from 'node:fs';
import type { CliContext } from '../cli-context.ts';
import { inPackage } from '../../util/package-root.ts';

/** package.json at the top of the checkout (the same from src/cli/verbs and dist/cli/verbs). */
const packageJson = () => inPackage('package.json');

/** `svcd version`: svcd's version, from package.json. */
export async function version(_args: unknown, ctx: CliContext): Promise<number> {
  const pkg = JSON.parse(readFileSync(packageJson(), 'utf8')) as { version?: unknown };
  ctx.out(String(pkg.version));
  return 0;
}
