#include "agent/pci_sysfs.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace fabricdiag::agent {

namespace {

constexpr absl::string_view kPciDevices = "bus/pci/devices";
constexpr absl::string_view kDevicesPrefix = "devices/";

}  // namespace

std::optional<uint32_t> ParsePciHex(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "0x") || text.empty() || text.size() > 8) {
    return std::nullopt;
  }
  uint32_t value = 0;
  for (const char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  if (!absl::SimpleHexAtoi(text, &value)) return std::nullopt;
  return value;
}

std::optional<int> ParseNumaNode(absl::string_view text) {
  int value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value) ||
      value < -1) {
    return std::nullopt;
  }
  return value;
}

PciScan ScanPci(SysfsReader* reader) {
  PciScan scan;
  auto error = [&scan](absl::string_view what, const absl::Status& status) {
    scan.errors.push_back(absl::StrCat(what, ": ", status.message()));
  };

  // Absent on hosts without PCI (and in trees without GPUs): not an error.
  absl::StatusOr<std::vector<std::string>> addresses =
      reader->ListDir(kPciDevices);
  if (!addresses.ok() && !absl::IsNotFound(addresses.status())) {
    error(kPciDevices, addresses.status());
  }
  for (const std::string& address :
       addresses.ok() ? *addresses : std::vector<std::string>{}) {
    const std::string dir = absl::StrCat(kPciDevices, "/", address);
    PciFunction f;
    f.address = absl::AsciiStrToLower(address);
    absl::StatusOr<std::string> path = reader->RealPath(dir);
    if (!path.ok()) {
      error(dir, path.status());
      continue;
    }
    absl::string_view rel = *path;
    if (!absl::ConsumePrefix(&rel, kDevicesPrefix)) {
      error(dir, absl::FailedPreconditionError(absl::StrCat(
                     "resolves to ", *path, ", not below ", kDevicesPrefix)));
      continue;
    }
    f.path = std::string(rel);
    bool ok = true;
    for (const auto& [name, field] :
         {std::pair<const char*, uint32_t*>{"class", &f.pci_class},
          std::pair<const char*, uint32_t*>{"vendor", &f.vendor}}) {
      const std::string file = absl::StrCat(dir, "/", name);
      absl::StatusOr<std::string> text = reader->ReadAttribute(file);
      std::optional<uint32_t> value;
      if (text.ok()) value = ParsePciHex(*text);
      if (!value.has_value()) {
        error(file, text.ok() ? absl::InvalidArgumentError(
                                    absl::StrCat("not a hex number: \"",
                                                 absl::CHexEscape(*text), "\""))
                              : text.status());
        ok = false;
        break;
      }
      *field = *value;
    }
    if (!ok) continue;
    const std::string numa_file = absl::StrCat(dir, "/numa_node");
    absl::StatusOr<std::string> numa = reader->ReadAttribute(numa_file);
    if (numa.ok()) {
      std::optional<int> node = ParseNumaNode(*numa);
      if (node.has_value()) {
        f.numa_node = *node;
      } else {
        error(numa_file,
              absl::InvalidArgumentError(absl::StrCat(
                  "not a NUMA node: \"", absl::CHexEscape(*numa), "\"")));
      }
    } else if (!absl::IsNotFound(numa.status())) {
      // Kernels without CONFIG_NUMA have no numa_node: unknown, no error.
      error(numa_file, numa.status());
    }
    scan.functions.push_back(std::move(f));
  }
  std::sort(scan.functions.begin(), scan.functions.end(),
            [](const PciFunction& a, const PciFunction& b) {
              return a.address < b.address;
            });

  absl::StatusOr<std::vector<std::string>> devices =
      reader->ListSubdirs("class/infiniband");
  if (!devices.ok() && !absl::IsNotFound(devices.status())) {
    error("class/infiniband", devices.status());
  }
  for (const std::string& device :
       devices.ok() ? *devices : std::vector<std::string>{}) {
    const std::string link =
        absl::StrCat("class/infiniband/", device, "/device");
    absl::StatusOr<std::string> pci = reader->ReadLinkBasename(link);
    if (!pci.ok()) {
      // Software devices (rxe, siw) have no parent device.
      if (!absl::IsNotFound(pci.status())) error(link, pci.status());
      continue;
    }
    RdmaNicPci nic;
    nic.device = device;
    nic.pci_address = absl::AsciiStrToLower(*pci);
    absl::StatusOr<std::vector<std::string>> netdevs =
        reader->ListSubdirs(absl::StrCat(link, "/net"));
    if (netdevs.ok() && !netdevs->empty()) nic.netdev = netdevs->front();
    scan.nics.push_back(std::move(nic));
  }
  return scan;
}

}  // namespace fabricdiag::agent
