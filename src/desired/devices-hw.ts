/**
 * Hardware passthrough devices (gpu, usb, infiniband): their properties and the checks across them. The
 * host is matched at the start, and usb devices (required=false by default, as LXD's) while they are plugged
 * (reconcilers/container/resolve-hw-devices.ts); what svcd can never do (mdev/MIG/SR-IOV GPUs, an InfiniBand
 * hwaddr) is refused here, before anything is written.
 */
import { isBool, isUint, oneOf, type ValueCheck } from './config-keys.ts';
import { ValidationError } from './errors.ts';

type Device = Record<string, string>;

const hexId: ValueCheck = (v) => (/^[0-9a-fA-F]{4}$/.test(v) ? undefined : 'must be 4 hexadecimal digits such as 10de');
const pciAddress: ValueCheck = (v) =>
  /^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/.test(v)
    ? undefined
    : 'must be a PCI address such as 0000:01:00.0';
const mode: ValueCheck = (v) => (/^0?[0-7]{3}$/.test(v) ? undefined : 'must be an octal permission mode such as 0660');
const ifName: ValueCheck = (v) =>
  /^[A-Za-z0-9_.@-]{1,15}$/.test(v) && v !== '.' && v !== '..'
    ? undefined
    : 'must be a valid interface name (at most 15 characters)';
const hwaddr: ValueCheck = (v) =>
  /^([0-9a-fA-F]{2}:){7,19}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(v)
    ? undefined
    : 'must be a MAC or InfiniBand (20-octet) hardware address';
const mtu: ValueCheck = (v) =>
  /^\d+$/.test(v) && Number(v) >= 68 && Number(v) <= 65535 ? undefined : 'must be an integer from 68 to 65535';

export const HW_DEVICE_TABLES: Record<string, Record<string, ValueCheck>> = {
  gpu: {
    gputype: oneOf('physical', 'mdev', 'mig', 'sriov'),
    vendorid: hexId,
    productid: hexId,
    id: isUint,
    pci: pciAddress,
    uid: isUint,
    gid: isUint,
    mode,
  },
  usb: { vendorid: hexId, productid: hexId, uid: isUint, gid: isUint, mode, required: isBool },
  infiniband: { nictype: oneOf('physical', 'sriov'), parent: ifName, name: ifName, hwaddr, mtu },
};

/** Checks of one gpu/usb/infiniband device past its single properties. */
export function checkHwDevice(name: string, dev: Device): void {
  const where = `Device "${name}" (${dev.type})`;
  if (dev.type === 'gpu' && (dev.gputype ?? 'physical') !== 'physical')
    throw new ValidationError(
      `${where}: invalid "gputype": "${dev.gputype}" GPUs need mediated devices, MIG or SR-IOV GPU support, which svcd does not provide; only "physical" is supported`,
    );
  if (dev.type === 'infiniband') {
    if (!dev.nictype) throw new ValidationError(`${where}: "nictype" (physical or sriov) is required`);
    if (!dev.parent) throw new ValidationError(`${where}: "parent" (the host InfiniBand interface) is required`);
    if (dev.hwaddr !== undefined)
      throw new ValidationError(
        `${where}: "hwaddr" is not supported: svcd cannot set an InfiniBand interface's address (the interface keeps its own)`,
      );
  }
}
