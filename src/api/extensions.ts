/**
 * `api_extensions`: only what really works, in the spec's order, plus `api_filtering` (which the
 * lxc CLI requires). One line per entry says why it is announced; the spec's other extensions and
 * why they are not are listed below. integration/e2e/spec-fields.test.ts holds the expected list.
 */
export const API_EXTENSIONS = [
  'container_host_shutdown_timeout', // boot.host_shutdown_timeout bounds each container's stop on SIGPWR
  'container_stop_priority', // boot.stop.priority orders the stops on SIGPWR
  'container_syscall_filtering', // security.syscalls.* rendered as LXC seccomp policy
  'auth_pki', // server.ca in the state dir: client certificates verified against the CA and ca.crl (and still in the trust store)
  'container_last_used_at', // last_used_at on containers (the observed last start)
  'etag', // ETag on GET and If-Match (412) on PUT/PATCH
  'patch', // PATCH merges on every object that has PUT
  'usb_devices', // usb devices by vendorid/productid; required=false (the default, as LXD) hotplugged: /dev/bus/usb watched with inotify, nodes follow into running containers
  'https_allowed_credentials', // core.https_allowed_credentials sets Access-Control-Allow-Credentials
  'image_compression_algorithm', // compression_algorithm on publish, server key images.compression_algorithm
  'directory_manipulation', // file API lists and creates directories (X-SVC-type: directory)
  'container_cpu_time', // state cpu.usage from the container's cgroup
  'profile_usedby', // used_by on profiles
  'container_push', // push and relay migration: the sink serves its own secrets (source mode push)
  'container_exec_recording', // exec record-output: log files under output, served by /logs
  'certificate_update', // PUT/PATCH with ETag on certificates
  'container_exec_signal_handling', // signal control messages reach the command
  'gpu_devices', // gpu devices (physical): DRM cards matched in sysfs by vendorid/productid/id/pci, their nodes passed through; no match fails naming what the host lacks
  'gpu_runtime', // nvidia.runtime: LXC's nvidia mount hook and the environment it reads (as LXD); refused, naming what is missing, without the NVIDIA container tooling
  'gpu_runtime_config', // nvidia.driver.capabilities, nvidia.require.cuda, nvidia.require.driver
  'infiniband', // infiniband nictype=physical: the IPoIB interface moved in as a physical nic, its port's uverbs/umad/issm nodes passed through; sriov and hwaddr refused; no InfiniBand device fails naming it
  'network', // /1.0/networks: managed bridges (bridge, dnsmasq, nftables) and host interfaces; bridged nics on them, security.mac_filtering
  'container_image_properties', // a container made from an image gets its properties as image.* keys
  'migration_progress', // fs_progress in both sides' operation metadata while rsync runs
  'id_map', // security.idmap.isolated, security.idmap.size, raw.id_map
  'network_firewall_filtering', // ipv4.firewall, ipv6.firewall: the accept rules of the inet svcd table
  'network_routes', // ipv4.routes, ipv6.routes on networks and nics
  'storage', // pools and volumes API (dir, btrfs)
  'file_delete', // DELETE on container files
  'file_append', // X-SVC-write: append
  'network_dhcp_expiry', // ipv4.dhcp.expiry, ipv6.dhcp.expiry in dnsmasq's ranges
  'image_create_aliases', // aliases on image create
  'container_stateless_copy', // a running container copies with a final sync; live=true is refused (no CRIU)
  'container_only_migration', // container_only on copy and migration (no snapshots)
  'unix_device_rename', // unix-char/unix-block take path and source, each defaulting to the other
  'storage_rsync_bwlimit', // rsync.bwlimit on pools limits volume copies and moves
  'network_vxlan_interface', // tunnel.NAME.interface
  'storage_btrfs_mount_options', // btrfs.mount_options, applied live
  'entity_description', // description on containers, snapshots (always empty), pools, volumes
  'image_force_refresh', // POST /1.0/images/<fp>/refresh: from update_source now (svc, simplestreams); aliases move, metadata refreshed
  'id_map_base', // security.idmap.base
  'file_symlinks', // symlinks created through the file API
  'container_push_target', // target on POST /1.0/containers/<name>: the source dials the sink's operation
  'storage_images_delete', // DELETE of a pool's image volume: its unpacked copy removed (the image stays; containers are clones of their own; the next create unpacks it again)
  'container_edit_metadata', // metadata and template endpoints
  'instance_types', // instance_type on create
  'storage_volatile_initial_source', // volatile.initial_source on pools
  'resources', // /1.0/resources and pool resources
  'kernel_limits', // limits.kernel.* as LXC prlimits
  'storage_api_volume_rename', // rename of custom volumes (and move to another pool)
  'console', // console log and console websocket
  'restrict_devsvc', // security.devsvc
  'devsvc_events', // events websocket on the guest socket
  'proxy', // proxy devices: an svcd-proxy forwarder per device of a running container (tcp, udp, unix), live, repaired when it dies
  'network_dhcp_gateway', // ipv4.dhcp.gateway as dnsmasq's router option
  'file_get_symlink', // symlinks read as X-SVC-type: symlink
  'network_leases', // GET /1.0/networks/<name>/leases: static (container nics) and dnsmasq's dynamic leases
  'unix_device_hotplug', // required=false on unix-char/unix-block: the host node is watched (inotify), it follows into the running container
  'storage_api_local_volume_handling', // copy and move custom volumes between local pools
  'operation_description', // description on operations
  'clustering', // several svcd daemons as one cluster on one PostgreSQL database: the embedded engine's or DATABASE_URL's (src/cluster/)
  'clustering_join', // GET /1.0/cluster lists the member-specific keys; a join's member_config gives a member its own pool source/size and bridge.external_interfaces
  'event_lifecycle', // lifecycle events
  'storage_api_remote_volume_handling', // custom volumes copy and move between servers (pull, push, relay), snapshots along
  'container_mount_propagation', // propagation on disk devices
  'container_backup', // backup endpoints and import of a backup tarball
  'devsvc_images', // security.devsvc.images: image export over the guest socket
  'container_local_cross_pool_handling', // a copy's root disk may be on another pool (snapshots follow)
  'proxy_unix', // unix and abstract unix sockets on either side of a proxy
  'proxy_udp', // udp proxies: one upstream socket per client, idle-expired
  'proxy_tcp_udp_multi_port_handling', // port ranges and lists, one to one or many to one
  'network_state', // GET /1.0/networks/<name>/state for any host interface (sysfs and /proc, no spawn)
  'proxy_unix_dac_properties', // uid, gid, mode of a proxy's unix listen socket
  'container_protection_delete', // security.protection.delete
  'proxy_priv_drop', // security.uid, security.gid: the forwarder drops to them after setup
  'pprof_http', // core.debug_address: a plain-HTTP debugging listener (heap snapshot, CPU profile, live figures), live, never on unless set
  'proxy_haproxy_protocol', // proxy_protocol: a PROXY v2 header on each upstream connection or flow
  'network_hwaddr', // bridge.hwaddr (bridge.hwaddress accepted too)
  'proxy_nat', // nat=true: DNAT rules in inet svcd_proxy to the container's static managed-nic address
  'network_nat_order', // ipv4.nat.order, ipv6.nat.order: svcd's NAT chain priority before or after others
  'container_full', // recursion=2 on /1.0/containers: state, snapshots, backups
  'backup_compression', // backups.compression_algorithm (gzip, bzip2, xz, zstd, none); per-backup compression_algorithm overrides it; import sniffs the format
  'storage_api_volume_snapshots', // volume snapshot endpoints
  'storage_unmapped', // security.unmapped on volumes
  'projects', // project API
  'network_vxlan_ttl', // tunnel.NAME.ttl
  'api_filtering', // filter= on collections (not in the spec; the lxc CLI refuses to list without it)
  'instances', // the container API under /1.0/instances too (not in the spec; lxc, pylxd and Ansible's inventory switch to it)
] as const;

/*
 * Not announced: the spec names them, and this host cannot carry them or svcd does not build them yet. Each is
 * refused clearly where a client could ask for it (a 400 naming the key or the driver).
 * - Storage drivers lvm, zfs and ceph: this kernel has no device-mapper, and there is no ZFS or Ceph here
 *   (storage_zfs_remove_snapshots, storage_zfs_use_refquota, storage_zfs_clone_copy, storage_lvm_mount_options,
 *   storage_lvm_vg_rename, storage_lvm_thinpool_rename, storage_lvm_lv_resizing, storage_driver_ceph,
 *   storage_ceph_user_name, storage_ceph_force_osd_reuse, and storage_block_filesystem_btrfs, which is about
 *   their block volumes). `POST /1.0/storage-pools` with one of them names what the host lacks.
 * - network_vlan, network_vlan_physical: this kernel has no 802.1q, so `vlan` is a 400 on every nictype.
 * - network_sriov: no SR-IOV virtual functions here; nictype=sriov is a 400 naming what the parent lacks.
 * - external_net_mgmt: there is no external network manager to integrate with.
 * - Live migration: no CRIU on this host (migration_pre_copy, container_snapshot_stateful_migration); a
 *   stateful snapshot or a live copy is refused.
 * - external_authentication, idp_authentication, idp_config, idp_config_key: macaroon and candid authentication
 *   need an identity service that upstream has retired.
 * - gpu types mdev, mig and sriov are refused (no mediated devices, MIG or SR-IOV GPUs here).
 */
