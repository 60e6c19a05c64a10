/**
 * The ceph.conf of a throwaway single-node test cluster. Every setting here was needed to
 * bring Ceph 16.2 (Debian bookworm) up without systemd, on loopback only, in a few seconds.
 */
export interface CephConfigInput {
  readonly fsid: string;
  readonly directory: string;
  readonly monitorPort: number;
  readonly gatewayPort: number;
  /** Memory the OSD's memstore may hold, in bytes. */
  readonly storeBytes: number;
}

/** The name radosgw runs under (`-n client.rgw.test`). */
export const GATEWAY_NAME = 'client.rgw.test';

export function cephConfig(input: CephConfigInput): string {
  const { fsid, directory, monitorPort, gatewayPort, storeBytes } = input;
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monitorPort}
public addr = 127.0.0.1
ms bind msgr1 = false
# No cephx: a throwaway cluster on loopback. With auth "none", radosgw loops on auth error
# -13 unless the monitor client mode is crc.
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
run dir = ${directory}/run
admin socket = ${directory}/run/$name.asok
log file = ${directory}/log/$name.log
pid file = ${directory}/run/$name.pid
keyring = ${directory}/keyring
mon data = ${directory}/mon.$id
osd data = ${directory}/osd.$id
# One OSD, one copy: the pools radosgw creates must be allowed a size of 1.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
# Proposals every 50 ms instead of 1 s: start-up takes about 2 s instead of about 14.
paxos propose interval = 0.05
osd objectstore = memstore
memstore device bytes = ${storeBytes}
osd crush update on start = true
debug ms = 0

[${GATEWAY_NAME}]
rgw frontends = beast endpoint=127.0.0.1:${gatewayPort} tcp_nodelay=1
rgw data = ${directory}/rgw
rgw thread pool size = 64
rgw enable usage log = false
`;
}
