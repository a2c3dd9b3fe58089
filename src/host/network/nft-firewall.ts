/**
 * Apply the `inet svcd` table (render-nft-ruleset.ts) with one `nft -f -`. An unchanged ruleset is not
 * applied again while the table still reads as it did right after the last apply (one `nft list`):
 * a table deleted or a rule added behind svcd's back is repaired by the next call.
 */
import { renderNftRuleset, NFT_TABLE } from './render-nft-ruleset.ts';
import type { NetworkSpec } from './types.ts';

export type RunNft = (args: readonly string[], input?: string) => Promise<string>;

export function createNftFirewall(run: RunNft) {
  let last: { script: string; listing: string } | undefined;
  const list = () => run(['list', 'table', 'inet', NFT_TABLE]).catch(() => '');

  return async function applyFirewall(specs: readonly NetworkSpec[]): Promise<void> {
    const script = renderNftRuleset(specs);
    if (last?.script === script && (await list()) === last.listing) return;
    last = undefined;
    await run(['-f', '-'], script);
    last = { script, listing: await list() };
  };
}
