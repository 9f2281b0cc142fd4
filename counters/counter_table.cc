#include "counters/counter_table.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::counters {
namespace {

using D = Direction;
using F = Family;
using K = Kind;
using M = Meaning;
using V = Driver;

constexpr double kMicroseconds = 1e-6;
// IB port_*_data count 4-octet words ("divided by 4 (lanes)",
// Documentation/ABI/stable/sysfs-class-infiniband).
constexpr double kWords = 4.0;

// The rows. Sources, per group:
// - IB PMA: Documentation/ABI/stable/sysfs-class-infiniband, the IBA
//   PortCounters attribute (widths), drivers/infiniband/core/sysfs.c.
// - mlx5 hw_counters: drivers/infiniband/hw/mlx5/counters.c (Q-counters
//   are read as 32-bit big-endian and widened, so they wrap at 2^32; the
//   congestion counters and rx_icrc_encapsulated are 64-bit).
// - bnxt_re: drivers/infiniband/hw/bnxt_re/hw_counters.c (64-bit).
// - irdma: drivers/infiniband/hw/irdma/verbs.c (gen2 CNP counters 32-bit).
// - rxe: drivers/infiniband/sw/rxe/rxe_hw_counters.c (atomic64).
// - netdev: include/uapi/linux/if_link.h struct rtnl_link_stats64,
//   net/core/net-sysfs.c (carrier_* are atomic_t, printed with %d).
// - ethtool: mlx5 drivers/net/ethernet/mellanox/mlx5/core/en_stats.c and
//   Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
//   counters.rst; bnxt_en drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c;
//   ice drivers/net/ethernet/intel/ice/ice_ethtool.c; veth drivers/net/veth.c.
// - gNMI OpenConfig: openconfig/public release/models/interfaces/
//   openconfig-interfaces.yang and openconfig-if-ethernet.yang (counter64,
//   last-clear in nanoseconds since the epoch), qos/
//   openconfig-qos-interfaces.yang (queue state); Arista's PFC augment
//   aristanetworks/yang EOS-4.36.1F/release/openconfig/models/interfaces/
//   arista-intf-augments.yang (watchdog counts are counter32); Cumulus
//   Linux's gNMI metric list (per switch-priority pause packets).
// - gNMI SONiC: SAI inc/saiport.h and saiqueue.h (uint64 statistics; the
//   *_PAUSE_DURATION_US ones in microseconds, the plain *_PAUSE_DURATION
//   ones in pause quanta), sonic-swss PFC watchdog fields of a queue.
constexpr CounterSpec kRows[] = {
    // ---- IB PMA PortCounters (counters/), every driver with a PMA --------
    {F::kIbPma, V::kAny, "port_xmit_data", M::kRdmaBytes, D::kTx, "bytes",
     kWords, K::kCounter, kPmaWidth,
     "data octets transmitted on all VLs, in 4-octet words"},
    {F::kIbPma, V::kAny, "port_rcv_data", M::kRdmaBytes, D::kRx, "bytes",
     kWords, K::kCounter, kPmaWidth,
     "data octets received on all VLs, in 4-octet words"},
    {F::kIbPma, V::kAny, "port_xmit_packets", M::kRdmaPackets, D::kTx,
     "packets", 1, K::kCounter, kPmaWidth, "packets transmitted on all VLs"},
    {F::kIbPma, V::kAny, "port_rcv_packets", M::kRdmaPackets, D::kRx, "packets",
     1, K::kCounter, kPmaWidth, "packets received on all VLs"},
    {F::kIbPma, V::kAny, "unicast_xmit_packets", M::kNone, D::kTx, "packets", 1,
     K::kCounter, 64, "unicast packets transmitted (extended-width PMA only)"},
    {F::kIbPma, V::kAny, "unicast_rcv_packets", M::kNone, D::kRx, "packets", 1,
     K::kCounter, 64, "unicast packets received (extended-width PMA only)"},
    {F::kIbPma, V::kAny, "multicast_xmit_packets", M::kNone, D::kTx, "packets",
     1, K::kCounter, 64, "multicast packets transmitted"},
    {F::kIbPma, V::kAny, "multicast_rcv_packets", M::kNone, D::kRx, "packets",
     1, K::kCounter, 64, "multicast packets received"},
    {F::kIbPma, V::kAny, "symbol_error", M::kSymbolErrors, D::kNone, "events",
     1, K::kCounter, 16, "minor link errors on any physical lane"},
    {F::kIbPma, V::kAny, "link_error_recovery", M::kLinkErrorRecovery, D::kNone,
     "events", 1, K::kCounter, 8,
     "link retrainings that recovered from errors"},
    {F::kIbPma, V::kAny, "link_downed", M::kLinkDowned, D::kNone, "events", 1,
     K::kCounter, 8, "times error recovery failed and the link went down"},
    {F::kIbPma, V::kAny, "port_rcv_errors", M::kRxErrors, D::kRx, "packets", 1,
     K::kCounter, 16, "received packets containing an error"},
    {F::kIbPma, V::kAny, "port_rcv_remote_physical_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 16,
     "received packets marked bad by an upstream link"},
    {F::kIbPma, V::kAny, "port_rcv_switch_relay_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 16,
     "received packets a switch could not forward"},
    {F::kIbPma, V::kAny, "port_xmit_discards", M::kTxDiscardsPhy, D::kTx,
     "packets", 1, K::kCounter, 16,
     "outbound packets dropped: port down or congested"},
    {F::kIbPma, V::kAny, "port_xmit_constraint_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 8, "packets not sent: partition or filtering"},
    {F::kIbPma, V::kAny, "port_rcv_constraint_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 8,
     "received packets dropped: partition or filtering"},
    {F::kIbPma, V::kAny, "local_link_integrity_errors", M::kNone, D::kNone,
     "events", 1, K::kCounter, 4,
     "local physical errors above their threshold"},
    {F::kIbPma, V::kAny, "excessive_buffer_overrun_errors", M::kNone, D::kNone,
     "events", 1, K::kCounter, 4, "input buffer overruns"},
    {F::kIbPma, V::kAny, "VL15_dropped", M::kNone, D::kNone, "packets", 1,
     K::kCounter, 16, "subnet management packets dropped"},
    {F::kIbPma, V::kAny, "port_xmit_wait", M::kNone, D::kTx, "ticks", 1,
     K::kCounter, 32, "ticks with data to send but no credits (back-pressure)"},
    // counters_ext/ of kernels before v4.5 (PortCountersExtended).
    {F::kIbPmaExt, V::kAny, "port_xmit_data_64", M::kRdmaBytes, D::kTx, "bytes",
     kWords, K::kCounter, 64, "data transmitted, in 4-octet words"},
    {F::kIbPmaExt, V::kAny, "port_rcv_data_64", M::kRdmaBytes, D::kRx, "bytes",
     kWords, K::kCounter, 64, "data received, in 4-octet words"},
    {F::kIbPmaExt, V::kAny, "port_xmit_packets_64", M::kRdmaPackets, D::kTx,
     "packets", 1, K::kCounter, 64, "packets transmitted"},
    {F::kIbPmaExt, V::kAny, "port_rcv_packets_64", M::kRdmaPackets, D::kRx,
     "packets", 1, K::kCounter, 64, "packets received"},
    {F::kIbPmaExt, V::kAny, "port_unicast_xmit_packets", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "unicast packets transmitted"},
    {F::kIbPmaExt, V::kAny, "port_unicast_rcv_packets", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "unicast packets received"},
    {F::kIbPmaExt, V::kAny, "port_multicast_xmit_packets", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "multicast packets transmitted"},
    {F::kIbPmaExt, V::kAny, "port_multicast_rcv_packets", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "multicast packets received"},

    // ---- mlx5 hw_counters: Q-counters (32-bit, wrap) ---------------------
    {F::kRdmaHw, V::kMlx5, "rx_write_requests", M::kNone, D::kRx, "events", 1,
     K::kCounter, 32, "RDMA WRITE requests received"},
    {F::kRdmaHw, V::kMlx5, "rx_read_requests", M::kNone, D::kRx, "events", 1,
     K::kCounter, 32, "RDMA READ requests received"},
    {F::kRdmaHw, V::kMlx5, "rx_atomic_requests", M::kNone, D::kRx, "events", 1,
     K::kCounter, 32, "atomic requests received"},
    {F::kRdmaHw, V::kMlx5, "rx_dct_connect", M::kNone, D::kRx, "events", 1,
     K::kCounter, 32, "DC transport connect requests received"},
    {F::kRdmaHw, V::kMlx5, "out_of_buffer", M::kRxOutOfBuffer, D::kNone,
     "events", 1, K::kCounter, 32,
     "drops: the receive queue had no posted buffer"},
    {F::kRdmaHw, V::kMlx5, "out_of_sequence", M::kOutOfSequence, D::kNone,
     "events", 1, K::kCounter, 32,
     "packets received with an unexpected PSN (loss, reordering)"},
    {F::kRdmaHw, V::kMlx5, "duplicate_request", M::kDuplicateRequest, D::kNone,
     "events", 1, K::kCounter, 32,
     "requests received again: the peer retransmitted"},
    {F::kRdmaHw, V::kMlx5, "rnr_nak_retry_err", M::kRnrNakRetry, D::kNone,
     "events", 1, K::kCounter, 32, "receiver-not-ready NAKs received"},
    {F::kRdmaHw, V::kMlx5, "packet_seq_err", M::kPacketSeqErr, D::kNone,
     "events", 1, K::kCounter, 32, "PSN sequence-error NAKs received"},
    {F::kRdmaHw, V::kMlx5, "implied_nak_seq_err", M::kImpliedNakSeqErr,
     D::kNone, "events", 1, K::kCounter, 32,
     "read or atomic responses that skipped ahead (implied NAK)"},
    {F::kRdmaHw, V::kMlx5, "local_ack_timeout_err", M::kLocalAckTimeout,
     D::kNone, "events", 1, K::kCounter, 32,
     "requester ACK timer expiries (loss, dead peer)"},
    {F::kRdmaHw, V::kMlx5, "resp_local_length_error", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "responder local length errors"},
    {F::kRdmaHw, V::kMlx5, "resp_cqe_error", M::kNone, D::kNone, "events", 1,
     K::kCounter, 32, "responder completions with error"},
    {F::kRdmaHw, V::kMlx5, "req_cqe_error", M::kNone, D::kNone, "events", 1,
     K::kCounter, 32, "requester completions with error"},
    {F::kRdmaHw, V::kMlx5, "req_remote_invalid_request", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "remote invalid request NAKs received"},
    {F::kRdmaHw, V::kMlx5, "req_remote_access_errors", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "requester remote access errors"},
    {F::kRdmaHw, V::kMlx5, "resp_remote_access_errors", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "responder remote access errors"},
    {F::kRdmaHw, V::kMlx5, "resp_cqe_flush_error", M::kNone, D::kNone, "events",
     1, K::kCounter, 32, "responder completions flushed"},
    {F::kRdmaHw, V::kMlx5, "req_cqe_flush_error", M::kNone, D::kNone, "events",
     1, K::kCounter, 32, "requester completions flushed"},
    {F::kRdmaHw, V::kMlx5, "req_transport_retries_exceeded",
     M::kRetriesExceeded, D::kNone, "events", 1, K::kCounter, 32,
     "transport retries exhausted: the QP failed"},
    {F::kRdmaHw, V::kMlx5, "req_rnr_retries_exceeded", M::kRetriesExceeded,
     D::kNone, "events", 1, K::kCounter, 32,
     "RNR retries exhausted: the QP failed"},
    {F::kRdmaHw, V::kMlx5, "roce_adp_retrans", M::kAdaptiveRetrans, D::kNone,
     "events", 1, K::kCounter, 32, "adaptive retransmissions"},
    {F::kRdmaHw, V::kMlx5, "roce_adp_retrans_to", M::kAdaptiveRetrans, D::kNone,
     "events", 1, K::kCounter, 32, "adaptive retransmission timeouts"},
    {F::kRdmaHw, V::kMlx5, "roce_slow_restart", M::kNone, D::kNone, "events", 1,
     K::kCounter, 32, "slow restarts after loss"},
    {F::kRdmaHw, V::kMlx5, "roce_slow_restart_cnps", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "CNPs generated by slow restart"},
    {F::kRdmaHw, V::kMlx5, "roce_slow_restart_trans", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "transitions into slow restart"},
    // ---- mlx5 hw_counters: congestion control and ICRC (64-bit) ----------
    {F::kRdmaHw, V::kMlx5, "rp_cnp_ignored", M::kNone, D::kNone, "events", 1,
     K::kCounter, 64, "CNPs received and ignored by the sender"},
    {F::kRdmaHw, V::kMlx5, "rp_cnp_handled", M::kCnpHandled, D::kNone, "events",
     1, K::kCounter, 64,
     "CNPs received and handled: this NIC slowed down as a sender"},
    {F::kRdmaHw, V::kMlx5, "np_ecn_marked_roce_packets", M::kEcnMarked,
     D::kNone, "packets", 1, K::kCounter, 64,
     "CE-marked RoCE packets received: congestion towards this NIC"},
    {F::kRdmaHw, V::kMlx5, "np_cnp_sent", M::kCnpSent, D::kNone, "events", 1,
     K::kCounter, 64,
     "CNPs sent in reply to CE marks: this NIC is a congestion victim"},
    {F::kRdmaHw, V::kMlx5, "rx_icrc_encapsulated", M::kNone, D::kRx, "events",
     1, K::kCounter, 64, "RoCE packets with ICRC errors"},

    // ---- bnxt_re hw_counters (64-bit; old and renamed spellings) --------
    {F::kRdmaHw, V::kBnxt, "np_cnp_pkts", M::kCnpSent, D::kNone, "packets", 1,
     K::kCounter, 64, "CNPs sent"},
    {F::kRdmaHw, V::kBnxt, "tx_cnp_pkts", M::kCnpSent, D::kTx, "packets", 1,
     K::kCounter, 64, "CNPs sent"},
    {F::kRdmaHw, V::kBnxt, "rx_cnp_pkts", M::kCnpHandled, D::kRx, "packets", 1,
     K::kCounter, 64, "CNPs received"},
    {F::kRdmaHw, V::kBnxt, "rx_ecn_marked_pkts", M::kEcnMarked, D::kRx,
     "packets", 1, K::kCounter, 64, "CE-marked packets received"},
    {F::kRdmaHw, V::kBnxt, "to_retransmits", M::kLocalAckTimeout, D::kNone,
     "events", 1, K::kCounter, 64, "retransmissions after an ACK timeout"},
    {F::kRdmaHw, V::kBnxt, "seq_err_naks_rcvd", M::kPacketSeqErr, D::kRx,
     "events", 1, K::kCounter, 64, "sequence-error NAKs received"},
    {F::kRdmaHw, V::kBnxt, "rnr_naks_rcvd", M::kRnrNakRetry, D::kRx, "events",
     1, K::kCounter, 64, "RNR NAKs received"},
    {F::kRdmaHw, V::kBnxt, "max_retry_exceeded", M::kRetriesExceeded, D::kNone,
     "events", 1, K::kCounter, 64, "retries exhausted: the QP failed"},

    // ---- irdma hw_counters --------------------------------------------
    {F::kRdmaHw, V::kIrdma, "cnpSent", M::kCnpSent, D::kNone, "events", 1,
     K::kCounter, 32, "CNPs sent"},
    {F::kRdmaHw, V::kIrdma, "cnpHandled", M::kCnpHandled, D::kNone, "events", 1,
     K::kCounter, 32, "CNPs received and handled"},
    {F::kRdmaHw, V::kIrdma, "RxECNMrkd", M::kEcnMarked, D::kNone, "events", 1,
     K::kCounter, 64, "CE-marked packets received"},

    // ---- rxe (soft-RoCE) hw_counters (64-bit) ---------------------------
    {F::kRdmaHw, V::kRxe, "out_of_seq_request", M::kOutOfSequence, D::kNone,
     "events", 1, K::kCounter, 64, "requests received out of sequence"},
    {F::kRdmaHw, V::kRxe, "rcvd_seq_err", M::kPacketSeqErr, D::kRx, "events", 1,
     K::kCounter, 64, "sequence-error NAKs received"},
    {F::kRdmaHw, V::kRxe, "rcvd_rnr_err", M::kRnrNakRetry, D::kRx, "events", 1,
     K::kCounter, 64, "RNR NAKs received"},
    {F::kRdmaHw, V::kRxe, "retry_exceeded_err", M::kRetriesExceeded, D::kNone,
     "events", 1, K::kCounter, 64, "transport retries exhausted"},
    {F::kRdmaHw, V::kRxe, "retry_rnr_exceeded_err", M::kRetriesExceeded,
     D::kNone, "events", 1, K::kCounter, 64, "RNR retries exhausted"},
    {F::kRdmaHw, V::kRxe, "duplicate_request", M::kDuplicateRequest, D::kNone,
     "events", 1, K::kCounter, 64, "duplicate requests received"},
    {F::kRdmaHw, V::kRxe, "link_downed", M::kLinkDowned, D::kNone, "events", 1,
     K::kCounter, 64, "times the port's link went down"},

    // ---- netdev statistics (struct rtnl_link_stats64) -----------------
    {F::kNetdevStatistics, V::kAny, "rx_packets", M::kNetdevPackets, D::kRx,
     "packets", 1, K::kCounter, 64, "packets received by the netdev"},
    {F::kNetdevStatistics, V::kAny, "tx_packets", M::kNetdevPackets, D::kTx,
     "packets", 1, K::kCounter, 64, "packets transmitted by the netdev"},
    {F::kNetdevStatistics, V::kAny, "rx_bytes", M::kNetdevBytes, D::kRx,
     "bytes", 1, K::kCounter, 64,
     "bytes received by the netdev (not RoCE on mlx5)"},
    {F::kNetdevStatistics, V::kAny, "tx_bytes", M::kNetdevBytes, D::kTx,
     "bytes", 1, K::kCounter, 64,
     "bytes transmitted by the netdev (not RoCE on mlx5)"},
    {F::kNetdevStatistics, V::kAny, "rx_errors", M::kRxErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "bad packets received"},
    {F::kNetdevStatistics, V::kAny, "tx_errors", M::kNone, D::kTx, "packets", 1,
     K::kCounter, 64, "packet transmit problems"},
    {F::kNetdevStatistics, V::kAny, "rx_dropped", M::kNone, D::kRx, "packets",
     1, K::kCounter, 64, "received packets dropped"},
    {F::kNetdevStatistics, V::kAny, "tx_dropped", M::kNone, D::kTx, "packets",
     1, K::kCounter, 64, "packets dropped on transmit"},
    {F::kNetdevStatistics, V::kAny, "multicast", M::kNone, D::kNone, "packets",
     1, K::kCounter, 64, "multicast packets received"},
    {F::kNetdevStatistics, V::kAny, "collisions", M::kNone, D::kNone, "events",
     1, K::kCounter, 64, "collisions"},
    {F::kNetdevStatistics, V::kAny, "rx_length_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "received frames with a bad length"},
    {F::kNetdevStatistics, V::kAny, "rx_over_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "receiver ring overflows"},
    {F::kNetdevStatistics, V::kAny, "rx_crc_errors", M::kCrcErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "received frames with a bad FCS"},
    {F::kNetdevStatistics, V::kAny, "rx_frame_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "frame alignment errors"},
    {F::kNetdevStatistics, V::kAny, "rx_fifo_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "receiver FIFO overruns"},
    {F::kNetdevStatistics, V::kAny, "rx_missed_errors", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "packets the host missed"},
    {F::kNetdevStatistics, V::kAny, "tx_aborted_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "aborted transmissions"},
    {F::kNetdevStatistics, V::kAny, "tx_carrier_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "transmissions without carrier"},
    {F::kNetdevStatistics, V::kAny, "tx_fifo_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "transmitter FIFO errors"},
    {F::kNetdevStatistics, V::kAny, "tx_heartbeat_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "heartbeat errors"},
    {F::kNetdevStatistics, V::kAny, "tx_window_errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "late collisions"},
    {F::kNetdevStatistics, V::kAny, "rx_compressed", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "compressed packets received"},
    {F::kNetdevStatistics, V::kAny, "tx_compressed", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "compressed packets transmitted"},
    {F::kNetdevStatistics, V::kAny, "rx_nohandler", M::kNone, D::kRx, "packets",
     1, K::kCounter, 64, "packets dropped: no protocol handler"},
    // ---- netdev counter attributes (atomic_t) --------------------------
    {F::kNetdevAttribute, V::kAny, "carrier_changes", M::kCarrierChanges,
     D::kNone, "events", 1, K::kCounter, 32, "carrier up/down transitions"},
    {F::kNetdevAttribute, V::kAny, "carrier_up_count", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "times the carrier came up"},
    {F::kNetdevAttribute, V::kAny, "carrier_down_count", M::kNone, D::kNone,
     "events", 1, K::kCounter, 32, "times the carrier went down"},

    // ---- ethtool: mlx5, in en_stats.c group order. Physical port (PPCNT).
    {F::kEthtool, V::kMlx5, "rx_bytes_phy", M::kPhyBytes, D::kRx, "bytes", 1,
     K::kCounter, 64, "bytes on the wire, RoCE included"},
    {F::kEthtool, V::kMlx5, "tx_bytes_phy", M::kPhyBytes, D::kTx, "bytes", 1,
     K::kCounter, 64, "bytes on the wire, RoCE included"},
    {F::kEthtool, V::kMlx5, "rx_packets_phy", M::kPhyPackets, D::kRx, "packets",
     1, K::kCounter, 64, "packets on the wire"},
    {F::kEthtool, V::kMlx5, "tx_packets_phy", M::kPhyPackets, D::kTx, "packets",
     1, K::kCounter, 64, "packets on the wire"},
    {F::kEthtool, V::kMlx5, "rx_discards_phy", M::kRxDiscardsPhy, D::kRx,
     "packets", 1, K::kCounter, 64,
     "received packets dropped for lack of port buffer"},
    {F::kEthtool, V::kMlx5, "tx_discards_phy", M::kTxDiscardsPhy, D::kTx,
     "packets", 1, K::kCounter, 64, "packets discarded on transmit"},
    {F::kEthtool, V::kMlx5, "rx_out_of_buffer", M::kRxOutOfBuffer, D::kRx,
     "packets", 1, K::kCounter, 64, "drops: no receive buffer posted"},
    // Whether PFC frames are included is not documented: no meaning, or
    // they would count twice with rx_prioN_pause.
    {F::kEthtool, V::kMlx5, "rx_pause_ctrl_phy", M::kNone, D::kRx, "frames", 1,
     K::kCounter, 64, "link-level pause frames received"},
    {F::kEthtool, V::kMlx5, "tx_pause_ctrl_phy", M::kNone, D::kTx, "frames", 1,
     K::kCounter, 64, "link-level pause frames sent"},
    {F::kEthtool, V::kMlx5, "rx_crc_errors_phy", M::kCrcErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "frames with a bad FCS"},
    {F::kEthtool, V::kMlx5, "rx_symbol_err_phy", M::kSymbolErrors, D::kRx,
     "errors", 1, K::kCounter, 64, "physical coding (symbol) errors"},
    {F::kEthtool, V::kMlx5, "rx_pcs_symbol_err_phy", M::kPcsSymbolErrors,
     D::kRx, "errors", 1, K::kCounter, 64, "symbol errors FEC did not correct"},
    {F::kEthtool, V::kMlx5, "rx_corrected_bits_phy", M::kCorrectedBits, D::kRx,
     "bits", 1, K::kCounter, 64, "bits corrected by FEC"},
    {F::kEthtool, V::kMlx5, "rx_bits_phy", M::kReceivedBits, D::kRx, "bits", 1,
     K::kCounter, 64, "bits received (the BER denominator)"},
    // en_stats.c keeps link_down_events in a 32-bit field.
    {F::kEthtool, V::kMlx5, "link_down_events_phy", M::kLinkDownEvents,
     D::kNone, "events", 1, K::kCounter, 32, "times the link went down"},
    // Read with MLX5E_READ_CTR32_BE.
    {F::kEthtool, V::kMlx5, "rx_pci_signal_integrity", M::kNone, D::kRx,
     "events", 1, K::kCounter, 32, "PCIe signal integrity errors received"},
    {F::kEthtool, V::kMlx5, "tx_pci_signal_integrity", M::kNone, D::kTx,
     "events", 1, K::kCounter, 32, "PCIe signal integrity errors sent"},
    // Percent (0..100) of the last second without PCIe credits: a gauge.
    {F::kEthtool, V::kMlx5, "outbound_pci_stalled_rd", M::kNone, D::kNone,
     "percent", 1, K::kGauge, 32, "time without PCIe read credits"},
    {F::kEthtool, V::kMlx5, "outbound_pci_stalled_wr", M::kNone, D::kNone,
     "percent", 1, K::kGauge, 32, "time without PCIe write credits"},
    // Per priority traffic, drops, ECN.
    {F::kEthtool, V::kMlx5, "rx_prio{p}_bytes", M::kPriorityBytes, D::kRx,
     "bytes", 1, K::kCounter, 64, "bytes received on the priority"},
    {F::kEthtool, V::kMlx5, "tx_prio{p}_bytes", M::kPriorityBytes, D::kTx,
     "bytes", 1, K::kCounter, 64, "bytes sent on the priority"},
    {F::kEthtool, V::kMlx5, "rx_prio{p}_packets", M::kNone, D::kRx, "packets",
     1, K::kCounter, 64, "packets received on the priority"},
    {F::kEthtool, V::kMlx5, "tx_prio{p}_packets", M::kNone, D::kTx, "packets",
     1, K::kCounter, 64, "packets sent on the priority"},
    {F::kEthtool, V::kMlx5, "rx_prio{p}_discards", M::kPriorityDiscards, D::kRx,
     "packets", 1, K::kCounter, 64,
     "received packets dropped for lack of buffer"},
    {F::kEthtool, V::kMlx5, "rx_prio{p}_marked", M::kEcnMarked, D::kRx,
     "packets", 1, K::kCounter, 64, "packets the device marked ECN CE"},

    // Per-priority PFC (only priorities with PFC on).
    {F::kEthtool, V::kMlx5, "rx_prio{p}_pause", M::kPfcPauseFrames, D::kRx,
     "frames", 1, K::kCounter, 64, "PFC pause frames received"},
    {F::kEthtool, V::kMlx5, "tx_prio{p}_pause", M::kPfcPauseFrames, D::kTx,
     "frames", 1, K::kCounter, 64, "PFC pause frames sent"},
    {F::kEthtool, V::kMlx5, "rx_prio{p}_pause_duration", M::kPfcPauseDuration,
     D::kRx, "seconds", kMicroseconds, K::kCounter, 64,
     "time this port was paused, in microseconds"},
    {F::kEthtool, V::kMlx5, "tx_prio{p}_pause_duration", M::kPfcPauseDuration,
     D::kTx, "seconds", kMicroseconds, K::kCounter, 64,
     "time this port paused its partner, in microseconds"},
    {F::kEthtool, V::kMlx5, "rx_prio{p}_pause_transition",
     M::kPfcPauseTransitions, D::kRx, "events", 1, K::kCounter, 64,
     "XOFF to XON transitions"},
    // 802.3x global pause, from the prio-0 slot; only while enabled.
    {F::kEthtool, V::kMlx5, "rx_global_pause", M::kGlobalPauseFrames, D::kRx,
     "frames", 1, K::kCounter, 64, "link pause frames received"},
    {F::kEthtool, V::kMlx5, "tx_global_pause", M::kGlobalPauseFrames, D::kTx,
     "frames", 1, K::kCounter, 64, "link pause frames sent"},
    {F::kEthtool, V::kMlx5, "rx_global_pause_duration", M::kGlobalPauseDuration,
     D::kRx, "seconds", kMicroseconds, K::kCounter, 64,
     "time paused by link pause, in microseconds"},
    {F::kEthtool, V::kMlx5, "tx_global_pause_duration", M::kGlobalPauseDuration,
     D::kTx, "seconds", kMicroseconds, K::kCounter, 64,
     "time this port paused its partner, in microseconds"},
    {F::kEthtool, V::kMlx5, "rx_global_pause_transition", M::kNone, D::kRx,
     "events", 1, K::kCounter, 64, "link pause XOFF to XON transitions"},
    // Pause storm prevention: the device stalled sending pause.
    {F::kEthtool, V::kMlx5, "tx_pause_storm_warning_events",
     M::kPauseStormWarning, D::kTx, "events", 1, K::kCounter, 64,
     "stalls past the pause-storm warning watermark"},
    {F::kEthtool, V::kMlx5, "tx_pause_storm_error_events", M::kPauseStormError,
     D::kTx, "events", 1, K::kCounter, 64,
     "storm prevention stopped sending pause"},
    // ---- ethtool: bnxt_en (port stats and the PFC "ext" stats) ----------
    {F::kEthtool, V::kBnxt, "rx_pfc_ena_frames_pri{p}", M::kPfcPauseFrames,
     D::kRx, "frames", 1, K::kCounter, 64, "PFC pause frames received"},
    {F::kEthtool, V::kBnxt, "tx_pfc_ena_frames_pri{p}", M::kPfcPauseFrames,
     D::kTx, "frames", 1, K::kCounter, 64, "PFC pause frames sent"},
    {F::kEthtool, V::kBnxt, "pfc_pri{p}_rx_duration_us", M::kPfcPauseDuration,
     D::kRx, "seconds", kMicroseconds, K::kCounter, 64,
     "time paused, in microseconds"},
    {F::kEthtool, V::kBnxt, "pfc_pri{p}_tx_duration_us", M::kPfcPauseDuration,
     D::kTx, "seconds", kMicroseconds, K::kCounter, 64,
     "time pausing the partner, in microseconds"},
    {F::kEthtool, V::kBnxt, "pfc_pri{p}_rx_transitions",
     M::kPfcPauseTransitions, D::kRx, "events", 1, K::kCounter, 64,
     "pause transitions received"},
    {F::kEthtool, V::kBnxt, "pfc_pri{p}_tx_transitions",
     M::kPfcPauseTransitions, D::kTx, "events", 1, K::kCounter, 64,
     "pause transitions sent"},
    {F::kEthtool, V::kBnxt, "rx_pause_frames", M::kGlobalPauseFrames, D::kRx,
     "frames", 1, K::kCounter, 64, "link pause frames received"},
    {F::kEthtool, V::kBnxt, "tx_pause_frames", M::kGlobalPauseFrames, D::kTx,
     "frames", 1, K::kCounter, 64, "link pause frames sent"},
    // Firmware pause-storm detection; the driver does not say which level,
    // so both map to the warning.
    {F::kEthtool, V::kBnxt, "continuous_pause_events", M::kPauseStormWarning,
     D::kNone, "events", 1, K::kCounter, 64, "continuous pause detected"},
    {F::kEthtool, V::kBnxt, "continuous_roce_pause_events",
     M::kPauseStormWarning, D::kNone, "events", 1, K::kCounter, 64,
     "continuous RoCE pause detected"},
    // The sum of the per-ring discards (ring had no buffer): closer to
    // mlx5 rx_out_of_buffer than to rx_discards_phy, but the port drop
    // counter bnxt_en offers.
    {F::kEthtool, V::kBnxt, "rx_total_discard_pkts", M::kRxDiscardsPhy, D::kRx,
     "packets", 1, K::kCounter, 64, "received packets discarded"},
    {F::kEthtool, V::kBnxt, "tx_total_discard_pkts", M::kTxDiscardsPhy, D::kTx,
     "packets", 1, K::kCounter, 64, "packets discarded on transmit"},
    {F::kEthtool, V::kBnxt, "rx_fcs_err_frames", M::kCrcErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "frames with a bad FCS"},
    // Per priority (rx_bytes_cos3 is a queue, not a priority).
    {F::kEthtool, V::kBnxt, "rx_bytes_pri{p}", M::kPriorityBytes, D::kRx,
     "bytes", 1, K::kCounter, 64, "bytes received on the priority"},
    {F::kEthtool, V::kBnxt, "tx_bytes_pri{p}", M::kPriorityBytes, D::kTx,
     "bytes", 1, K::kCounter, 64, "bytes sent on the priority"},
    {F::kEthtool, V::kBnxt, "rx_packets_pri{p}", M::kNone, D::kRx, "packets", 1,
     K::kCounter, 64, "packets received on the priority"},
    {F::kEthtool, V::kBnxt, "tx_packets_pri{p}", M::kNone, D::kTx, "packets", 1,
     K::kCounter, 64, "packets sent on the priority"},

    // ---- ethtool: ice (".nic" = port-level). XOFF pauses, XON resumes. ---
    {F::kEthtool, V::kIce, "rx_priority_{p}_xoff.nic", M::kPfcPauseFrames,
     D::kRx, "frames", 1, K::kCounter, 64, "PFC XOFF frames received"},
    {F::kEthtool, V::kIce, "tx_priority_{p}_xoff.nic", M::kPfcPauseFrames,
     D::kTx, "frames", 1, K::kCounter, 64, "PFC XOFF frames sent"},
    {F::kEthtool, V::kIce, "rx_priority_{p}_xon.nic", M::kNone, D::kRx,
     "frames", 1, K::kCounter, 64, "PFC XON frames received"},
    {F::kEthtool, V::kIce, "tx_priority_{p}_xon.nic", M::kNone, D::kTx,
     "frames", 1, K::kCounter, 64, "PFC XON frames sent"},
    {F::kEthtool, V::kIce, "link_xoff_rx.nic", M::kGlobalPauseFrames, D::kRx,
     "frames", 1, K::kCounter, 64, "link XOFF frames received"},
    {F::kEthtool, V::kIce, "link_xoff_tx.nic", M::kGlobalPauseFrames, D::kTx,
     "frames", 1, K::kCounter, 64, "link XOFF frames sent"},
    {F::kEthtool, V::kIce, "link_xon_rx.nic", M::kNone, D::kRx, "frames", 1,
     K::kCounter, 64, "link XON frames received"},
    {F::kEthtool, V::kIce, "link_xon_tx.nic", M::kNone, D::kTx, "frames", 1,
     K::kCounter, 64, "link XON frames sent"},
    {F::kEthtool, V::kIce, "rx_dropped.nic", M::kRxDiscardsPhy, D::kRx,
     "packets", 1, K::kCounter, 64, "received packets dropped by the port"},
    {F::kEthtool, V::kIce, "rx_crc_errors.nic", M::kCrcErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "frames with a bad FCS"},

    // ---- ethtool: veth. The peer's ifindex (0: none) is a value. -------
    {F::kEthtool, V::kVeth, "peer_ifindex", M::kNone, D::kNone, "", 1,
     K::kGauge, 64, "ifindex of the veth peer"},

    // ---- gNMI OpenConfig: interface counters ----------------------------
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-octets", M::kPhyBytes, D::kRx,
     "bytes", 1, K::kCounter, 64, "octets received, framing included"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-octets", M::kPhyBytes, D::kTx,
     "bytes", 1, K::kCounter, 64, "octets transmitted, framing included"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-pkts", M::kPhyPackets, D::kRx,
     "packets", 1, K::kCounter, 64, "packets received, bad ones included"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-pkts", M::kPhyPackets, D::kTx,
     "packets", 1, K::kCounter, 64, "packets transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-unicast-pkts", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "unicast packets received"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-broadcast-pkts", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "broadcast packets received"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-multicast-pkts", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "multicast packets received"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-unicast-pkts", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "unicast packets transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-broadcast-pkts", M::kNone,
     D::kTx, "packets", 1, K::kCounter, 64, "broadcast packets transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-multicast-pkts", M::kNone,
     D::kTx, "packets", 1, K::kCounter, 64, "multicast packets transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-errors", M::kRxErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "received packets with an error"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-errors", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "packets not transmitted: errors"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-discards", M::kRxDiscardsPhy,
     D::kRx, "packets", 1, K::kCounter, 64,
     "received packets discarded without an error (buffers)"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/out-discards", M::kTxDiscardsPhy,
     D::kTx, "packets", 1, K::kCounter, 64,
     "packets discarded on transmit without an error"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-unknown-protos", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "received packets of unknown protocols"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/in-fcs-errors", M::kCrcErrors,
     D::kRx, "packets", 1, K::kCounter, 64, "frames with a bad FCS"},
    // carrier-transitions is deprecated for interface-transitions; both
    // count transitions to and from UP (a flap is 2), as link-transitions
    // does before hold timers. The same events: the collector takes the
    // largest.
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/carrier-transitions",
     M::kCarrierChanges, D::kNone, "events", 1, K::kCounter, 64,
     "oper-status transitions to or from UP (deprecated name)"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/interface-transitions",
     M::kCarrierChanges, D::kNone, "events", 1, K::kCounter, 64,
     "oper-status transitions to or from UP"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/link-transitions",
     M::kCarrierChanges, D::kNone, "events", 1, K::kCounter, 64,
     "link transitions to or from UP, before hold timers"},
    {F::kGnmiOpenConfig, V::kAny, "/interfaces/interface/state/counters/resets",
     M::kNone, D::kNone, "events", 1, K::kCounter, 64,
     "resets of the interface hardware"},
    // A time, not a count: when it changes, every counter of the
    // interface restarted (the bridge takes it as a reset).
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/state/counters/last-clear", M::kNone, D::kNone,
     "seconds", 1e-9, K::kGauge, 64,
     "when the counters were last cleared, nanoseconds since the epoch"},
    {F::kGnmiOpenConfig, V::kAny, "/interfaces/interface/state/last-change",
     M::kNone, D::kNone, "seconds", 1e-9, K::kGauge, 64,
     "when oper-status last changed, nanoseconds since the epoch"},
    {F::kGnmiOpenConfig, V::kAny, "/interfaces/interface/state/ifindex",
     M::kNone, D::kNone, "", 1, K::kGauge, 64, "SNMP ifIndex"},
    {F::kGnmiOpenConfig, V::kAny, "/interfaces/interface/state/mtu", M::kNone,
     D::kNone, "bytes", 1, K::kGauge, 64, "MTU"},
    // ---- gNMI OpenConfig: Ethernet counters -----------------------------
    // Whether PFC frames are included is the vendor's choice.
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-mac-pause-frames",
     M::kGlobalPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "MAC pause frames received"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/out-mac-pause-frames",
     M::kGlobalPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "MAC pause frames transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-crc-errors",
     M::kCrcErrors, D::kRx, "packets", 1, K::kCounter, 64,
     "frames with a bad CRC"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-symbol-error",
     M::kSymbolErrors, D::kRx, "packets", 1, K::kCounter, 64,
     "frames received with symbol errors"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-mac-control-frames",
     M::kNone, D::kRx, "frames", 1, K::kCounter, 64,
     "MAC control frames received"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/out-mac-control-frames",
     M::kNone, D::kTx, "frames", 1, K::kCounter, 64,
     "MAC control frames transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-oversize-frames",
     M::kNone, D::kRx, "frames", 1, K::kCounter, 64,
     "well-formed frames over 1518 octets"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-undersize-frames",
     M::kNone, D::kRx, "frames", 1, K::kCounter, 64, "frames under 64 octets"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-jabber-frames", M::kNone,
     D::kRx, "frames", 1, K::kCounter, 64, "over-long frames with a bad FCS"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-fragment-frames",
     M::kNone, D::kRx, "frames", 1, K::kCounter, 64,
     "short frames with a bad FCS"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/in-block-errors", M::kNone,
     D::kRx, "errors", 1, K::kCounter, 64, "PCS block errors"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/fec-corrected-blocks",
     M::kNone, D::kRx, "blocks", 1, K::kCounter, 64, "FEC codewords corrected"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/state/counters/fec-uncorrectable-blocks",
     M::kNone, D::kRx, "blocks", 1, K::kCounter, 64,
     "FEC codewords FEC could not correct"},
    // ---- gNMI OpenConfig: egress queues (any queue name) ----------------
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "transmit-octets",
     M::kQueueBytes, D::kTx, "bytes", 1, K::kCounter, 64,
     "octets the queue transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "transmit-pkts",
     M::kQueuePackets, D::kTx, "packets", 1, K::kCounter, 64,
     "packets the queue transmitted"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "dropped-pkts",
     M::kQueueDrops, D::kTx, "packets", 1, K::kCounter, 64,
     "packets the queue dropped"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "dropped-octets",
     M::kNone, D::kTx, "bytes", 1, K::kCounter, 64, "octets the queue dropped"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "ecn-marked-pkts",
     M::kQueueEcnMarked, D::kTx, "packets", 1, K::kCounter, 64,
     "packets the queue marked ECN CE"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "ecn-marked-octets",
     M::kNone, D::kTx, "bytes", 1, K::kCounter, 64,
     "octets the queue marked ECN CE"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "max-queue-len",
     M::kNone, D::kTx, "bytes", 1, K::kGauge, 64,
     "largest queue length in the last interval"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/output/queues/queue[name=*]/state/"
     "avg-queue-len",
     M::kNone, D::kTx, "bytes", 1, K::kGauge, 64,
     "average queue length in the last interval"},
    // ---- gNMI OpenConfig: Arista PFC augment (arista-intf-augments) -----
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/priorities/priority[index={p}]/"
     "state/in-frames",
     M::kPfcPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "PFC frames received on the priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/priorities/priority[index={p}]/"
     "state/out-frames",
     M::kPfcPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "PFC frames transmitted on the priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/watchdog/tx-queues/"
     "tx-queue[index=*][queue-type=*]/state/stuck-count",
     M::kPfcWatchdogStorms, D::kTx, "events", 1, K::kCounter, 32,
     "times the PFC watchdog found the egress queue stuck"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/watchdog/tx-queues/"
     "tx-queue[index=*][queue-type=*]/state/recovery-count",
     M::kPfcWatchdogRestorations, D::kTx, "events", 1, K::kCounter, 32,
     "times the egress queue recovered from a PFC storm"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/watchdog/tx-queues/"
     "tx-queue[index=*][queue-type=*]/state/stuck-count-last-occurred",
     M::kNone, D::kTx, "seconds", 1e-9, K::kGauge, 64,
     "when the queue was last stuck, nanoseconds since the epoch"},
    {F::kGnmiOpenConfig, V::kAny,
     "/interfaces/interface/ethernet/pfc/watchdog/tx-queues/"
     "tx-queue[index=*][queue-type=*]/state/recovery-count-last-occurred",
     M::kNone, D::kTx, "seconds", 1e-9, K::kGauge, 64,
     "when the queue last recovered, nanoseconds since the epoch"},
    // ---- gNMI OpenConfig: Cumulus Linux per switch-priority pause -------
    // As Cumulus Linux lists its metrics (state/switch-priority/counters),
    // and the same leaves under switch-priority/state/counters, with the
    // pause durations, in microseconds.
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/state/switch-priority[priority={p}]/counters/"
     "in-pause-pkts",
     M::kPfcPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "pause frames received on the switch priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/state/switch-priority[priority={p}]/counters/"
     "out-pause-pkts",
     M::kPfcPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "pause frames transmitted on the switch priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/switch-priority[priority={p}]/state/counters/"
     "in-pause-pkts",
     M::kPfcPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "pause frames received on the switch priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/switch-priority[priority={p}]/state/counters/"
     "out-pause-pkts",
     M::kPfcPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "pause frames transmitted on the switch priority"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/switch-priority[priority={p}]/state/counters/"
     "in-pause-duration",
     M::kPfcPauseDuration, D::kRx, "seconds", kMicroseconds, K::kCounter, 64,
     "time paused by the partner, in microseconds"},
    {F::kGnmiOpenConfig, V::kAny,
     "/qos/interfaces/interface/switch-priority[priority={p}]/state/counters/"
     "out-pause-duration",
     M::kPfcPauseDuration, D::kTx, "seconds", kMicroseconds, K::kCounter, 64,
     "time this port paused the partner, in microseconds"},

    // ---- gNMI SONiC: COUNTERS_DB port statistics (SAI names) -----------
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_IN_OCTETS", M::kPhyBytes, D::kRx,
     "bytes", 1, K::kCounter, 64, "octets received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_OCTETS", M::kPhyBytes,
     D::kTx, "bytes", 1, K::kCounter, 64, "octets transmitted"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_IN_UCAST_PKTS", M::kNone, D::kRx,
     "packets", 1, K::kCounter, 64, "unicast packets received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS", M::kNone,
     D::kRx, "packets", 1, K::kCounter, 64, "non-unicast packets received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_UCAST_PKTS", M::kNone,
     D::kTx, "packets", 1, K::kCounter, 64, "unicast packets transmitted"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS", M::kNone,
     D::kTx, "packets", 1, K::kCounter, 64, "non-unicast packets transmitted"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_IN_ERRORS", M::kRxErrors, D::kRx,
     "packets", 1, K::kCounter, 64, "received packets with an error"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_ERRORS", M::kNone, D::kTx,
     "packets", 1, K::kCounter, 64, "packets not transmitted: errors"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_IN_DISCARDS", M::kRxDiscardsPhy,
     D::kRx, "packets", 1, K::kCounter, 64, "received packets discarded"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_DISCARDS", M::kTxDiscardsPhy,
     D::kTx, "packets", 1, K::kCounter, 64, "packets discarded on transmit"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS",
     M::kCrcErrors, D::kRx, "packets", 1, K::kCounter, 64,
     "frames with a bad FCS or alignment"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_DOT3_STATS_FCS_ERRORS",
     M::kCrcErrors, D::kRx, "packets", 1, K::kCounter, 64,
     "frames with a bad FCS"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_DOT3_STATS_SYMBOL_ERRORS",
     M::kSymbolErrors, D::kRx, "events", 1, K::kCounter, 64,
     "invalid data symbols"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PAUSE_RX_PKTS",
     M::kGlobalPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "link pause frames received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PAUSE_TX_PKTS",
     M::kGlobalPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "link pause frames transmitted"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_RX_PKTS",
     M::kPfcPauseFrames, D::kRx, "frames", 1, K::kCounter, 64,
     "PFC frames received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_TX_PKTS",
     M::kPfcPauseFrames, D::kTx, "frames", 1, K::kCounter, 64,
     "PFC frames transmitted"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_RX_PAUSE_DURATION_US",
     M::kPfcPauseDuration, D::kRx, "seconds", kMicroseconds, K::kCounter, 64,
     "time paused by the partner, in microseconds"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_TX_PAUSE_DURATION_US",
     M::kPfcPauseDuration, D::kTx, "seconds", kMicroseconds, K::kCounter, 64,
     "time this port paused the partner, in microseconds"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_RX_PAUSE_DURATION",
     M::kNone, D::kRx, "quanta", 1, K::kCounter, 64,
     "pause received, in quanta of 512 bit times"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_TX_PAUSE_DURATION",
     M::kNone, D::kTx, "quanta", 1, K::kCounter, 64,
     "pause transmitted, in quanta of 512 bit times"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_PFC_{p}_ON2OFF_RX_PKTS",
     M::kPfcPauseTransitions, D::kRx, "events", 1, K::kCounter, 64,
     "pause ON to OFF transitions received"},
    {F::kGnmiSonic, V::kAny, "SAI_PORT_STAT_IF_OUT_QLEN", M::kNone, D::kTx,
     "packets", 1, K::kGauge, 64, "output queue length"},
    // ---- gNMI SONiC: queue statistics (Queues[N], any queue) -----------
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_BYTES", M::kQueueBytes,
     D::kTx, "bytes", 1, K::kCounter, 64, "bytes the queue transmitted"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_PACKETS",
     M::kQueuePackets, D::kTx, "packets", 1, K::kCounter, 64,
     "packets the queue transmitted"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_DROPPED_PACKETS",
     M::kQueueDrops, D::kTx, "packets", 1, K::kCounter, 64,
     "packets the queue dropped"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_DROPPED_BYTES", M::kNone,
     D::kTx, "bytes", 1, K::kCounter, 64, "bytes the queue dropped"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS",
     M::kQueueEcnMarked, D::kTx, "packets", 1, K::kCounter, 64,
     "packets WRED marked ECN CE"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
     M::kNone, D::kTx, "bytes", 1, K::kGauge, 64,
     "peak shared buffer use since the last read"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES",
     M::kNone, D::kTx, "bytes", 1, K::kGauge, 64, "buffer in use now"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED",
     M::kPfcWatchdogStorms, D::kTx, "events", 1, K::kCounter, 64,
     "PFC storms the watchdog detected on the queue"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED",
     M::kPfcWatchdogRestorations, D::kTx, "events", 1, K::kCounter, 64,
     "times the watchdog restored the queue"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/PFC_WD_DETECTION_TIME", M::kNone,
     D::kNone, "seconds", kMicroseconds, K::kGauge, 64,
     "watchdog detection time, in microseconds"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/PFC_WD_RESTORATION_TIME", M::kNone,
     D::kNone, "seconds", kMicroseconds, K::kGauge, 64,
     "watchdog restoration time, in microseconds"},
    {F::kGnmiSonic, V::kAny, "Queues[*]/PFC_WD_DETECTION_TIME_LEFT", M::kNone,
     D::kNone, "seconds", kMicroseconds, K::kGauge, 64,
     "time left before the watchdog acts, in microseconds"},
};

constexpr absl::string_view kPriorityHole = "{p}";
constexpr absl::string_view kVportPrefix = "vport_";

// One name a row can take: the row and the priority it implies.
struct Candidate {
  const CounterSpec* row;
  int priority;
};

// (family, exact name) -> every row spelling it, in table order.
class Index {
 public:
  Index() {
    for (const CounterSpec& row : kRows) {
      if (IsPerPriority(row)) {
        for (int p = 0; p < 8; ++p) Add(row, ExpandName(row, p), p);
      } else {
        Add(row, std::string(row.name), -1);
      }
    }
  }

  const std::vector<Candidate>* Find(Family family,
                                     absl::string_view name) const {
    auto it = by_name_.find(std::make_pair(family, std::string(name)));
    return it == by_name_.end() ? nullptr : &it->second;
  }

 private:
  void Add(const CounterSpec& row, std::string name, int priority) {
    by_name_[std::make_pair(row.family, std::move(name))].push_back(
        {&row, priority});
  }

  absl::flat_hash_map<std::pair<Family, std::string>, std::vector<Candidate>>
      by_name_;
};

const Index& TheIndex() {
  static const Index* const kIndex = new Index();
  return *kIndex;
}

// Direction from the shape of a name that no row describes: "tx_"/"_tx_"/
// "xmit" is transmit, "rx_"/"_rx_"/"rcv" receive.
Direction DirectionFromName(absl::string_view name) {
  if (absl::StartsWith(name, "tx_") || absl::StrContains(name, "_tx_") ||
      absl::StrContains(name, "xmit")) {
    return Direction::kTx;
  }
  if (absl::StartsWith(name, "rx_") || absl::StrContains(name, "_rx_") ||
      absl::StrContains(name, "rcv")) {
    return Direction::kRx;
  }
  return Direction::kNone;
}

// Unit from the shape of an unknown RDMA counter name.
std::string RdmaUnitFromName(absl::string_view name) {
  if (absl::EndsWith(name, "_bytes")) return "bytes";
  if (absl::StrContains(name, "packets") || absl::EndsWith(name, "_pkts")) {
    return "packets";
  }
  return "events";
}

// Unit from the shape of an unknown netdev statistic.
std::string NetdevUnitFromName(absl::string_view name) {
  return absl::EndsWith(name, "_bytes") ? "bytes" : "packets";
}

// The last element of a gNMI name ("in-octets" of ".../counters/in-octets").
absl::string_view LastElement(absl::string_view name) {
  const size_t slash = name.rfind('/');
  return slash == absl::string_view::npos ? name : name.substr(slash + 1);
}

// Direction and unit from the shape of an unknown gNMI leaf: OpenConfig
// spells "in-..."/"out-..." and "-octets"/"-pkts"/"-frames"; SAI spells
// "_IN_"/"_OUT_"/"_RX_"/"_TX_" and "_OCTETS"/"_BYTES"/"_PKTS"/"_PACKETS".
void GnmiShape(absl::string_view name, CounterInfo* info) {
  const absl::string_view leaf = LastElement(name);
  if (absl::StartsWith(leaf, "in-") || absl::StrContains(leaf, "_IN_") ||
      absl::StrContains(leaf, "_RX_")) {
    info->direction = Direction::kRx;
  } else if (absl::StartsWith(leaf, "out-") ||
             absl::StrContains(leaf, "_OUT_") ||
             absl::StrContains(leaf, "_TX_")) {
    info->direction = Direction::kTx;
  }
  if (absl::EndsWith(leaf, "-octets") || absl::EndsWith(leaf, "_OCTETS") ||
      absl::EndsWith(leaf, "_BYTES")) {
    info->unit = "bytes";
  } else if (absl::EndsWith(leaf, "-pkts") || absl::EndsWith(leaf, "_PKTS") ||
             absl::EndsWith(leaf, "_PACKETS")) {
    info->unit = "packets";
  } else if (absl::EndsWith(leaf, "-frames")) {
    info->unit = "frames";
  }
}

// `name` with every list key value replaced by "*": "queue[name=3]" ->
// "queue[name=*]", "Queues[3]" -> "Queues[*]". Empty when it has no keys.
std::string WildcardKeys(absl::string_view name) {
  std::string out;
  bool any = false;
  size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    if (c != '[') {
      out.push_back(c);
      ++i;
      continue;
    }
    const size_t close = name.find(']', i);
    if (close == absl::string_view::npos) return "";
    const absl::string_view key = name.substr(i + 1, close - i - 1);
    const size_t eq = key.find('=');
    absl::StrAppend(&out, "[",
                    eq == absl::string_view::npos ? "" : key.substr(0, eq + 1),
                    "*]");
    any = true;
    i = close + 1;
  }
  return any ? out : "";
}

CounterInfo FromRow(const Candidate& c) {
  CounterInfo info;
  info.meaning = c.row->meaning;
  info.direction = c.row->direction;
  info.priority = c.priority;
  info.scale = c.row->scale;
  info.unit = std::string(c.row->unit);
  info.kind = c.row->kind;
  if (c.row->width_bits == kPmaWidth) {
    info.width_bits = 32;
    info.pma_width = true;
  } else {
    info.width_bits = c.row->width_bits;
  }
  info.row = c.row;
  return info;
}

// What an unknown name gets.
CounterInfo Default(Family family, absl::string_view name) {
  CounterInfo info;
  switch (family) {
    case Family::kIbPma:
    case Family::kIbPmaExt:
    case Family::kRdmaHw:
      info.unit = RdmaUnitFromName(name);
      info.direction = DirectionFromName(name);
      break;
    case Family::kNetdevStatistics:
      info.unit = NetdevUnitFromName(name);
      info.direction = DirectionFromName(name);
      break;
    case Family::kNetdevAttribute:
      info.unit = "events";
      break;
    case Family::kEthtool:
      break;
    case Family::kGnmiOpenConfig:
    case Family::kGnmiSonic:
      GnmiShape(name, &info);
      break;
  }
  return info;
}

}  // namespace

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kIbPma:
      return "ib_pma";
    case Family::kIbPmaExt:
      return "ib_pma_ext";
    case Family::kRdmaHw:
      return "rdma_hw";
    case Family::kNetdevStatistics:
      return "netdev_statistics";
    case Family::kNetdevAttribute:
      return "netdev_attribute";
    case Family::kEthtool:
      return "ethtool";
    case Family::kGnmiOpenConfig:
      return "gnmi_openconfig";
    case Family::kGnmiSonic:
      return "gnmi_sonic";
  }
  return "";
}

bool FamilyOf(Subsystem subsystem, Family* family) {
  switch (subsystem) {
    case Subsystem::kRdmaPortCounters:
      *family = Family::kIbPma;
      return true;
    case Subsystem::kRdmaPortCountersExt:
      *family = Family::kIbPmaExt;
      return true;
    case Subsystem::kRdmaPortHwCounters:
    case Subsystem::kRdmaDeviceHwCounters:
      *family = Family::kRdmaHw;
      return true;
    case Subsystem::kNetdevStatistics:
      *family = Family::kNetdevStatistics;
      return true;
    case Subsystem::kNetdevAttribute:
      *family = Family::kNetdevAttribute;
      return true;
    case Subsystem::kEthtool:
      *family = Family::kEthtool;
      return true;
    case Subsystem::kRdmaPortAttribute:
    case Subsystem::kVerbs:
    case Subsystem::kGnmi:
      return false;
  }
  return false;
}

absl::Span<const CounterSpec> Rows() { return kRows; }

bool IsPerPriority(const CounterSpec& row) {
  return absl::StrContains(row.name, kPriorityHole);
}

std::string ExpandName(const CounterSpec& row, int priority) {
  const size_t hole = row.name.find(kPriorityHole);
  if (hole == absl::string_view::npos) return std::string(row.name);
  return absl::StrCat(row.name.substr(0, hole), priority,
                      row.name.substr(hole + kPriorityHole.size()));
}

CounterInfo Classify(Family family, Driver driver, absl::string_view name) {
  const std::vector<Candidate>* candidates = TheIndex().Find(family, name);
  if (candidates == nullptr &&
      (family == Family::kGnmiOpenConfig || family == Family::kGnmiSonic)) {
    const std::string wildcard = WildcardKeys(name);
    if (!wildcard.empty()) candidates = TheIndex().Find(family, wildcard);
  }
  if (candidates == nullptr) {
    if (family == Family::kRdmaHw && absl::StartsWith(name, kVportPrefix)) {
      CounterInfo info =
          Classify(family, driver, name.substr(kVportPrefix.size()));
      if (info.row != nullptr) {
        info.meaning = Meaning::kNone;
        info.row = nullptr;
        return info;
      }
    }
    return Default(family, name);
  }
  if (driver != Driver::kUnknown) {
    for (const Candidate& c : *candidates) {
      if (c.row->driver == driver) return FromRow(c);
    }
    for (const Candidate& c : *candidates) {
      if (c.row->driver == Driver::kAny) return FromRow(c);
    }
    // Another driver's spelling: its meaning holds, its width does not.
    CounterInfo info = FromRow(candidates->front());
    info.width_bits = 64;
    info.pma_width = false;
    return info;
  }
  return FromRow(candidates->front());
}

std::vector<const CounterSpec*> RowsFor(Family family, Driver driver) {
  std::vector<const CounterSpec*> out;
  for (const CounterSpec& row : kRows) {
    if (row.family == family &&
        (row.driver == driver || row.driver == Driver::kAny)) {
      out.push_back(&row);
    }
  }
  return out;
}

}  // namespace fabricdiag::counters
