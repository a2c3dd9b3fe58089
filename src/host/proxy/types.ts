export interface ForwarderSpec {
  containerId: string;
  device: string;
  listenNs: number;
  listen: string;
  connectNs: number;
  connect: string;
  listenUid?: number;
  listenGid?: number;
  listenMode?: string;
  dropUid?: number;
  dropGid?: number;
  proxyProtocol: boolean;
  exitWith: number;
}
export interface NatRule {
  protocol: 'tcp' | 'udp';
  family: 4 | 6;
  listenAddress: string;
  listenPorts: number[];
  connectAddress: string;
  connectPorts: number[];
  bridge: string;
}
