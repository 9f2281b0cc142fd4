#include "agent/lldp_lldpctl.h"

#include <lldpctl.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent {
namespace {

// Owns one reference of an atom.
struct AtomRef {
  lldpctl_atom_t* atom = nullptr;
  explicit AtomRef(lldpctl_atom_t* a) : atom(a) {}
  ~AtomRef() {
    if (atom != nullptr) lldpctl_atom_dec_ref(atom);
  }
  AtomRef(const AtomRef&) = delete;
  AtomRef& operator=(const AtomRef&) = delete;
};

std::string Str(lldpctl_atom_t* atom, lldpctl_key_t key) {
  const char* s = atom == nullptr ? nullptr : lldpctl_atom_get_str(atom, key);
  return s == nullptr ? std::string() : std::string(s);
}

// Calls fn(value) for each element of the list `atom` (the library's
// lldpctl_atom_foreach macro, without its shadowing loop variable).
template <typename Fn>
void ForEach(lldpctl_atom_t* atom, Fn&& fn) {
  if (atom == nullptr) return;
  for (lldpctl_atom_iter_t* it = lldpctl_atom_iter(atom); it != nullptr;
       it = lldpctl_atom_iter_next(atom, it)) {
    AtomRef value(lldpctl_atom_iter_value(atom, it));
    if (value.atom == nullptr) break;
    fn(value.atom);
  }
}

// The neighbor as lldpcli shows it (lldpd's src/client/display.c): the
// chassis of a neighbor port is its lldpctl_k_port_chassis atom.
LldpNeighbor FromPort(const std::string& netdev, lldpctl_atom_t* port) {
  LldpNeighbor n;
  n.netdev = netdev;
  n.port_id = Str(port, lldpctl_k_port_id);
  n.port_id_type = Str(port, lldpctl_k_port_id_subtype);
  n.port_description = Str(port, lldpctl_k_port_descr);
  AtomRef chassis(lldpctl_atom_get(port, lldpctl_k_port_chassis));
  if (chassis.atom != nullptr) {
    n.system_name = Str(chassis.atom, lldpctl_k_chassis_name);
    n.chassis_id = Str(chassis.atom, lldpctl_k_chassis_id);
    n.chassis_id_type = Str(chassis.atom, lldpctl_k_chassis_id_subtype);
    AtomRef mgmt(lldpctl_atom_get(chassis.atom, lldpctl_k_chassis_mgmt));
    ForEach(mgmt.atom, [&n](lldpctl_atom_t* address) {
      if (n.management_address.empty()) {
        n.management_address = Str(address, lldpctl_k_mgmt_ip);
      }
    });
  }
  return n;
}

// liblldpctl logs each failed connection to stderr itself; the monitor
// logs an absent lldpd once and counts every read in a metric instead.
void DropLibraryLog(int /*severity*/, const char* /*msg*/) {}

class RealLldpctlApi final : public LldpctlApi {
 public:
  explicit RealLldpctlApi(std::string socket_path)
      : socket_path_(std::move(socket_path)) {
    lldpctl_log_callback(DropLibraryLog);
  }

  absl::StatusOr<std::vector<LldpNeighbor>> Neighbors() override {
    // NULL callbacks: the library's synchronous ones over a UNIX socket.
    lldpctl_conn_t* conn =
        lldpctl_new_name(socket_path_.c_str(), nullptr, nullptr, nullptr);
    if (conn == nullptr) {
      return absl::ResourceExhaustedError("lldpctl_new_name: out of memory");
    }
    std::vector<LldpNeighbor> out;
    absl::Status status;
    {
      AtomRef interfaces(lldpctl_get_interfaces(conn));
      if (interfaces.atom == nullptr) {
        const lldpctl_error_t error = lldpctl_last_error(conn);
        const std::string why =
            absl::StrCat(socket_path_, ": ", lldpctl_strerror(error));
        status = error == LLDPCTL_ERR_CANNOT_CONNECT
                     ? absl::UnavailableError(why)
                     : absl::InternalError(why);
      }
      ForEach(interfaces.atom, [&](lldpctl_atom_t* iface) {
        const std::string netdev = Str(iface, lldpctl_k_interface_name);
        AtomRef port(lldpctl_get_port(iface));
        if (port.atom == nullptr) return;
        AtomRef neighbors(
            lldpctl_atom_get(port.atom, lldpctl_k_port_neighbors));
        ForEach(neighbors.atom, [&](lldpctl_atom_t* neighbor) {
          out.push_back(FromPort(netdev, neighbor));
        });
      });
    }
    lldpctl_release(conn);
    if (!status.ok()) return status;
    return out;
  }

 private:
  std::string socket_path_;
};

}  // namespace

std::unique_ptr<LldpctlApi> NewLldpctlApi(std::string socket_path) {
  return std::make_unique<RealLldpctlApi>(std::move(socket_path));
}

}  // namespace fabricdiag::agent
