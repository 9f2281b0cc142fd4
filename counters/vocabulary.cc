#include "counters/vocabulary.h"

#include "absl/strings/match.h"
#include "counters/meanings.h"

namespace fabricdiag::counters {

const char* SubsystemName(Subsystem s) {
  switch (s) {
    case Subsystem::kRdmaPortCounters:
      return "rdma_port_counters";
    case Subsystem::kRdmaPortCountersExt:
      return "rdma_port_counters_ext";
    case Subsystem::kRdmaPortHwCounters:
      return "rdma_port_hw_counters";
    case Subsystem::kRdmaDeviceHwCounters:
      return "rdma_device_hw_counters";
    case Subsystem::kRdmaPortAttribute:
      return "rdma_port_attribute";
    case Subsystem::kNetdevStatistics:
      return "netdev_statistics";
    case Subsystem::kNetdevAttribute:
      return "netdev_attribute";
    case Subsystem::kEthtool:
      return "ethtool";
    case Subsystem::kVerbs:
      return "verbs";
    case Subsystem::kGnmi:
      return "gnmi";
  }
  return "unknown";
}

const char* MeaningName(Meaning m) { return SpecOf(m).name; }

const char* DirectionName(Direction d) {
  switch (d) {
    case Direction::kNone:
      return "";
    case Direction::kRx:
      return "rx";
    case Direction::kTx:
      return "tx";
  }
  return "";
}

const char* DriverName(Driver d) {
  switch (d) {
    case Driver::kUnknown:
      return "";
    case Driver::kAny:
      return "any";
    case Driver::kMlx5:
      return "mlx5";
    case Driver::kMlx4:
      return "mlx4";
    case Driver::kBnxt:
      return "bnxt";
    case Driver::kIce:
      return "ice";
    case Driver::kIrdma:
      return "irdma";
    case Driver::kRxe:
      return "rxe";
    case Driver::kHfi1:
      return "hfi1";
    case Driver::kVeth:
      return "veth";
  }
  return "";
}

Driver DriverFromKernelModule(absl::string_view module) {
  struct Entry {
    absl::string_view module;
    Driver driver;
  };
  static constexpr Entry kModules[] = {
      {"mlx5_core", Driver::kMlx5}, {"mlx4_core", Driver::kMlx4},
      {"bnxt_en", Driver::kBnxt},   {"ice", Driver::kIce},
      {"hfi1", Driver::kHfi1},      {"veth", Driver::kVeth},
  };
  for (const Entry& e : kModules) {
    if (e.module == module) return e.driver;
  }
  return Driver::kUnknown;
}

Driver RdmaDriverFromKernelModule(absl::string_view module) {
  if (module == "ice" || module == "i40e") return Driver::kIrdma;
  return DriverFromKernelModule(module);
}

Driver DriverFromRdmaDeviceName(absl::string_view device) {
  // The kernel names RDMA devices "<driver prefix><index>"
  // (ib_register_device's name format in each driver).
  struct Entry {
    absl::string_view prefix;
    Driver driver;
  };
  static constexpr Entry kPrefixes[] = {
      {"mlx5_", Driver::kMlx5},   {"mlx4_", Driver::kMlx4},
      {"bnxt_re", Driver::kBnxt}, {"irdma", Driver::kIrdma},
      {"rxe", Driver::kRxe},      {"hfi1_", Driver::kHfi1},
  };
  for (const Entry& e : kPrefixes) {
    if (absl::StartsWith(device, e.prefix)) return e.driver;
  }
  return Driver::kUnknown;
}

}  // namespace fabricdiag::counters
