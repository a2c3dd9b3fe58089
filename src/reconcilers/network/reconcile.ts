import { and, eq, isNull } from 'drizzle-orm';
import type { Db, DbOrTx, Tx } from '../../db/types.ts';
import { nicsOnNetwork } from '../../desired/network-nics.ts';
import { claimMemberStatus, noOtherMemberHas, readMemberFacts, writeMemberFacts } from '../../desired/member-status.ts';
import { deleteNetworkRow, lockNetworkRow, NETWORK_KIND } from '../../desired/networks.ts';
import { networks, type NetworkRow } from '../../desired/schema/index.ts';
import { networkDirOf } from '../../host/layout.ts';
import type { NetworkSpec } from '../../host/network/types.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import type { NetworkAdapter } from '../adapters.ts';
import type { Reconciler } from '../runtime/index.ts';
import { networkSpecOf } from './network-spec.ts';

interface NetworkFacts {
  /** The bridge this network has on the host (its name when it was last converged): a rename removes the old one. */
  bridge?: string;
}

export interface NetworkReconcilerDeps {
  db: Db;
  stateDir: string;
  /** This member: its own member-specific keys apply here, and its own status row (desired/member-status.ts). */
  node: string;
  network: NetworkAdapter;
  /**
   * Called after a network that was broken on the host (its bridge gone, its dnsmasq dead) was repaired:
   * the running containers on it attach their nics to the bridge again.
   */
  onRepaired?: (name: string) => void;
}

/**
 * The host spec of a network row (its directory from the layout), on member `node`: its own member-specific
 * keys (bridge.external_interfaces, given when it joined) replace the network's.
 */
export const specOfRow = (
  stateDir: string,
  row: Pick<NetworkRow, 'id' | 'name' | 'config'> & { memberConfig?: NetworkRow['memberConfig'] },
  node?: string,
): NetworkSpec => {
  const own = node ? row.memberConfig?.[node] : undefined;
  const config = own ? { ...row.config, ...own } : row.config;
  return networkSpecOf({ ...row, config }, networkDirOf(stateDir, row.name));
};

/**
 * Converge one managed network (key: its id): its bridge, addresses, tunnels, routes and sysctls, its
 * dnsmasq and the DHCP host entries of the container nics on it, and svcd's firewall table; once marked
 * for deletion, all of it removed and its row deleted. Idempotent from any partial state: every step
 * compares with what the host shows. The firewall table holds every network's rules and is replaced
 * whole, one reconcile at a time, from the networks in the database at that moment.
 */
export function createNetworkReconciler(deps: NetworkReconcilerDeps): Reconciler {
  const { db, stateDir, network } = deps;
  const firewall = createKeyedMutex();

  // What is on the host: not being removed, and not only defined on some members (desired/network-pending.ts).
  const liveRows = () =>
    db
      .select()
      .from(networks)
      .where(and(isNull(networks.deletingAt), eq(networks.pending, false)));
  /** Serialized: a concurrent reconcile that read the networks earlier cannot put an older table back. */
  const syncFirewall = (signal: AbortSignal) =>
    firewall.run('table', async () => {
      const rows = await liveRows();
      await network.applyFirewall(
        rows.map((r) => specOfRow(stateDir, r, deps.node)),
        signal,
      );
    });

  return {
    kind: NETWORK_KIND,
    // Before what uses them: at start, containers and volumes are converged only once these are on the host.
    startupTier: 0,
    async listKeys() {
      return (await db.select({ id: networks.id }).from(networks).where(eq(networks.pending, false))).map((r) => r.id);
    },
    async reconcile(id, ctx) {
      const [row] = await db.select().from(networks).where(eq(networks.id, id));
      if (!row || row.pending) return {};
      const { node } = deps;
      let facts = (await readMemberFacts(db, node, NETWORK_KIND, id)) as NetworkFacts | undefined;
      // Converged here before under this name: a bridge missing now was deleted behind svcd's back.
      const madeBefore = facts?.bridge === row.name;
      // Renamed: the bridge of the old name goes first (a network in use cannot be renamed).
      if (facts?.bridge && facts.bridge !== row.name) {
        await network.removeNetwork(facts.bridge, networkDirOf(stateDir, facts.bridge), ctx.signal);
        delete facts.bridge;
        await writeMemberFacts(db, node, NETWORK_KIND, id, { ...facts });
      }
      if (row.deletingAt) {
        await network.removeNetwork(row.name, networkDirOf(stateDir, row.name), ctx.signal);
        await syncFirewall(ctx.signal);
        // This member's part is gone (its status row goes with the settlement, status-settler.ts); the row goes
        // with the last member's.
        // Both statements are sent at once (the settler leaves them in flight), the row's lock first.
        const removeRows = (tx: Tx) =>
          Promise.all([
            lockNetworkRow(tx, id, 'update'),
            deleteNetworkRow(tx, id, noOtherMemberHas(node, NETWORK_KIND, id)),
          ]);
        return { observedGeneration: row.generation, gone: true, removeRows };
      }
      // Recorded before the host is touched: a crash half-way still knows which bridge to remove, and a
      // deletion knows this member has its part to remove (unless the network is being deleted already).
      if (!facts) {
        facts = { bridge: row.name };
        const live = async (tx: DbOrTx) => {
          const r = await lockNetworkRow(tx, id, 'share');
          return !!r && !r.deletingAt && !r.pending;
        };
        if (!(await claimMemberStatus(db, node, NETWORK_KIND, id, { ...facts }, live))) return {};
      } else if (facts.bridge !== row.name)
        await writeMemberFacts(db, node, NETWORK_KIND, id, { ...facts, bridge: row.name });
      const spec = specOfRow(stateDir, row, deps.node);
      // Broken after it had converged once (a bridge deleted behind svcd's back): its containers need their nics back.
      const broken = madeBefore ? await network.health(spec) : undefined;
      await network.ensureNetwork(spec, ctx.signal);
      await syncFirewall(ctx.signal);
      // The containers' nics write their own entries (before they start); what is left of gone ones goes here.
      const keep = new Set((await nicsOnNetwork(db, row.name)).map((n) => `${n.containerId}.${n.device}`));
      await network.pruneDhcpHosts(spec, keep);
      if (broken !== undefined) deps.onRepaired?.(row.name);
      return { observedGeneration: row.generation };
    },
  };
}
