import type { RemoteProtocol, RemoteProtocolName } from './remote-protocol.ts';

/** The protocol clients by name; a pull names one (`lxd` is LXD's word for `svc`, as clients send it). */
export function createProtocolRegistry(protocols: Partial<Record<RemoteProtocolName, RemoteProtocol>>) {
  return {
    get(name: RemoteProtocolName): RemoteProtocol {
      const p = protocols[name];
      if (!p) throw new Error(`The ${name} protocol is not available on this server`);
      return p;
    },
    names: (): RemoteProtocolName[] => Object.keys(protocols) as RemoteProtocolName[],
  };
}
export type ProtocolRegistry = ReturnType<typeof createProtocolRegistry>;
