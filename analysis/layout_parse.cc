#include "analysis/layout_parse.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_labels.h"
#include "analysis/layout_model.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/yaml_reader.h"

namespace fabricdiag::analysis {
namespace {

using yaml::CheckList;
using yaml::FieldError;
using yaml::Index;
using yaml::ReadString;
using yaml::ReadStringList;
using yaml::ReadUint;

// Scalars + collections + aliases: the default bound admits hosts/rails
// layouts of kMaxRanks ranks at >= 2 GPUs per node, and explicit `ranks`
// placements (9 values per rank) of ~110,000 ranks.
yaml::Limits DocumentLimits() {
  yaml::Limits limits;
  limits.max_bytes = kMaxDocumentBytes;
  return limits;
}

yaml::Limits TopologyLimits() {
  yaml::Limits limits;
  limits.max_bytes = kMaxTopologyBytes;
  limits.max_values = kMaxTopologyValues;
  return limits;
}

// The fields of a mapping of a layout or topology file.
absl::StatusOr<yaml::Fields> ReadFields(
    const YAML::Node& node, std::string path,
    std::initializer_list<absl::string_view> allowed) {
  return yaml::Fields::Read(node, std::move(path), "layout", allowed);
}

absl::StatusOr<double> ReadNumber(const YAML::Node& node,
                                  absl::string_view path) {
  return yaml::ReadNonNegativeNumber(node, path);
}

absl::Status ReadParallelism(const YAML::Node& node, v1::Parallelism& out) {
  ASSIGN_OR_RETURN(
      yaml::Fields f,
      ReadFields(node, "parallelism", {"tp", "pp", "dp", "cp", "ep", "order"}));
  ASSIGN_OR_RETURN(YAML::Node tp, f.Require("tp"));
  ASSIGN_OR_RETURN(uint32_t tp_value, ReadUint(tp, f.Path("tp")));
  out.set_tp(tp_value);
  ASSIGN_OR_RETURN(YAML::Node pp, f.Require("pp"));
  ASSIGN_OR_RETURN(uint32_t pp_value, ReadUint(pp, f.Path("pp")));
  out.set_pp(pp_value);
  ASSIGN_OR_RETURN(YAML::Node dp, f.Require("dp"));
  ASSIGN_OR_RETURN(uint32_t dp_value, ReadUint(dp, f.Path("dp")));
  out.set_dp(dp_value);
  if (auto cp = f.Get("cp")) {
    ASSIGN_OR_RETURN(uint32_t v, ReadUint(*cp, f.Path("cp")));
    out.set_cp(v);
  }
  if (auto ep = f.Get("ep")) {
    ASSIGN_OR_RETURN(uint32_t v, ReadUint(*ep, f.Path("ep")));
    out.set_ep(v);
  }
  if (auto order = f.Get("order")) {
    ASSIGN_OR_RETURN(std::string v, ReadString(*order, f.Path("order")));
    out.set_order(std::move(v));
  }
  return absl::OkStatus();
}

absl::Status ReadRanks(const YAML::Node& node, v1::Layout& out) {
  RETURN_IF_ERROR(CheckList(node, "ranks", kMaxRanks));
  out.mutable_ranks()->Reserve(static_cast<int>(node.size()));
  size_t i = 0;
  for (const YAML::Node& item : node) {
    ASSIGN_OR_RETURN(
        yaml::Fields f,
        ReadFields(item, Index("ranks", i), {"rank", "host", "gpu", "nic"}));
    v1::RankPlacement& p = *out.add_ranks();
    ASSIGN_OR_RETURN(YAML::Node rank, f.Require("rank"));
    ASSIGN_OR_RETURN(uint32_t rank_value, ReadUint(rank, f.Path("rank")));
    p.set_rank(rank_value);
    ASSIGN_OR_RETURN(YAML::Node host, f.Require("host"));
    ASSIGN_OR_RETURN(std::string host_value, ReadString(host, f.Path("host")));
    p.set_host(std::move(host_value));
    ASSIGN_OR_RETURN(YAML::Node gpu, f.Require("gpu"));
    ASSIGN_OR_RETURN(uint32_t gpu_value, ReadUint(gpu, f.Path("gpu")));
    p.set_gpu(gpu_value);
    if (auto nic = f.Get("nic")) {
      ASSIGN_OR_RETURN(std::string v, ReadString(*nic, f.Path("nic")));
      p.set_nic(std::move(v));
    }
    ++i;
  }
  return absl::OkStatus();
}

absl::Status ReadModel(const YAML::Node& node, v1::ModelSpec& out) {
  ASSIGN_OR_RETURN(
      yaml::Fields f,
      ReadFields(node, "model",
                 {"params", "hidden", "layers", "seq_len", "micro_batch",
                  "micro_batches", "dtype_bytes", "experts", "top_k"}));
  // params is a count, but 1.4e11 is how people write it.
  if (auto params = f.Get("params")) {
    ASSIGN_OR_RETURN(double v, ReadNumber(*params, f.Path("params")));
    out.set_params(v);
  }
  using Setter = void (v1::ModelSpec::*)(uint32_t);
  const std::pair<absl::string_view, Setter> ints[] = {
      {"hidden", &v1::ModelSpec::set_hidden},
      {"layers", &v1::ModelSpec::set_layers},
      {"seq_len", &v1::ModelSpec::set_seq_len},
      {"micro_batch", &v1::ModelSpec::set_micro_batch},
      {"micro_batches", &v1::ModelSpec::set_micro_batches},
      {"dtype_bytes", &v1::ModelSpec::set_dtype_bytes},
      {"experts", &v1::ModelSpec::set_experts},
      {"top_k", &v1::ModelSpec::set_top_k},
  };
  for (const auto& [key, setter] : ints) {
    if (auto v = f.Get(key)) {
      ASSIGN_OR_RETURN(uint32_t value, ReadUint(*v, f.Path(key)));
      (out.*setter)(value);
    }
  }
  return absl::OkStatus();
}

// A mapping of strings; what the keys and values may be is
// LayoutModel::Build's (analysis/layout_labels.h).
absl::Status ReadLabels(const YAML::Node& node, v1::Layout& out) {
  if (!node.IsMap()) {
    return FieldError("labels", absl::StrCat("expected a mapping, got ",
                                             yaml::Describe(node)));
  }
  // Bounded before copying: the limit is checked again, with the others,
  // once parsed.
  if (node.size() > kMaxLayoutLabels) {
    return FieldError("labels",
                      absl::StrCat(node.size(), " labels exceed the limit of ",
                                   kMaxLayoutLabels));
  }
  auto& labels = *out.mutable_labels();
  for (const auto& entry : node) {
    ASSIGN_OR_RETURN(std::string key, ReadString(entry.first, "labels"));
    const std::string path = yaml::Join("labels", key);
    ASSIGN_OR_RETURN(std::string value, ReadString(entry.second, path));
    if (labels.count(key) != 0) return FieldError(path, "given twice");
    labels[key] = std::move(value);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Layout> LayoutFromNode(const YAML::Node& root) {
  ASSIGN_OR_RETURN(
      yaml::Fields f,
      ReadFields(root, "",
                 {"job", "gpus_per_node", "nvlink_domain", "parallelism",
                  "hosts", "rails", "ranks", "model", "labels"}));
  v1::Layout out;
  ASSIGN_OR_RETURN(YAML::Node job, f.Require("job"));
  ASSIGN_OR_RETURN(std::string job_value, ReadString(job, "job"));
  out.set_job(std::move(job_value));
  ASSIGN_OR_RETURN(YAML::Node gpn, f.Require("gpus_per_node"));
  ASSIGN_OR_RETURN(uint32_t gpn_value, ReadUint(gpn, "gpus_per_node"));
  out.set_gpus_per_node(gpn_value);
  if (auto nvl = f.Get("nvlink_domain")) {
    ASSIGN_OR_RETURN(uint32_t v, ReadUint(*nvl, "nvlink_domain"));
    out.set_nvlink_domain(v);
  }
  ASSIGN_OR_RETURN(YAML::Node par, f.Require("parallelism"));
  RETURN_IF_ERROR(ReadParallelism(par, *out.mutable_parallelism()));
  if (auto hosts = f.Get("hosts")) {
    RETURN_IF_ERROR(
        ReadStringList(*hosts, "hosts", kMaxHosts,
                       [&](std::string s) { out.add_hosts(std::move(s)); }));
  }
  if (auto rails = f.Get("rails")) {
    RETURN_IF_ERROR(
        ReadStringList(*rails, "rails", kMaxGpusPerNode,
                       [&](std::string s) { out.add_rails(std::move(s)); }));
  }
  if (auto ranks = f.Get("ranks")) RETURN_IF_ERROR(ReadRanks(*ranks, out));
  if (auto model = f.Get("model")) {
    RETURN_IF_ERROR(ReadModel(*model, *out.mutable_model()));
  }
  if (auto labels = f.Get("labels")) RETURN_IF_ERROR(ReadLabels(*labels, out));
  return out;
}

absl::Status ReadGnmi(const YAML::Node& node, const std::string& path,
                      v1::GnmiTarget& out) {
  ASSIGN_OR_RETURN(yaml::Fields f, ReadFields(node, path,
                                              {"address", "dialect", "tls_ca",
                                               "credentials_file", "insecure",
                                               "tls_server_name"}));
  using Setter = void (v1::GnmiTarget::*)(const std::string&);
  const std::pair<absl::string_view, Setter> strs[] = {
      {"address", &v1::GnmiTarget::set_address},
      {"dialect", &v1::GnmiTarget::set_dialect},
      {"tls_ca", &v1::GnmiTarget::set_tls_ca},
      {"credentials_file", &v1::GnmiTarget::set_credentials_file},
      {"tls_server_name", &v1::GnmiTarget::set_tls_server_name},
  };
  for (const auto& [key, setter] : strs) {
    if (auto v = f.Get(key)) {
      ASSIGN_OR_RETURN(std::string value, ReadString(*v, f.Path(key)));
      (out.*setter)(value);
    }
  }
  if (auto v = f.Get("insecure")) {
    ASSIGN_OR_RETURN(bool insecure, yaml::ReadBool(*v, f.Path("insecure")));
    out.set_insecure(insecure);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Topology> TopologyFromNode(const YAML::Node& root) {
  ASSIGN_OR_RETURN(yaml::Fields f,
                   yaml::Fields::Read(root, "", "topology",
                                      {"switches", "links", "switch_links"}));
  v1::Topology out;
  if (auto switches = f.Get("switches")) {
    RETURN_IF_ERROR(CheckList(*switches, "switches", kMaxTopologySwitches));
    size_t i = 0;
    for (const YAML::Node& item : *switches) {
      ASSIGN_OR_RETURN(yaml::Fields s,
                       ReadFields(item, Index("switches", i),
                                  {"name", "uplinks", "gnmi", "chassis_id"}));
      v1::Switch& sw = *out.add_switches();
      ASSIGN_OR_RETURN(YAML::Node name, s.Require("name"));
      ASSIGN_OR_RETURN(std::string name_value,
                       ReadString(name, s.Path("name")));
      sw.set_name(std::move(name_value));
      if (auto uplinks = s.Get("uplinks")) {
        RETURN_IF_ERROR(ReadStringList(
            *uplinks, s.Path("uplinks"), 4096,
            [&](std::string u) { sw.add_uplinks(std::move(u)); }));
      }
      if (auto gnmi = s.Get("gnmi")) {
        RETURN_IF_ERROR(ReadGnmi(*gnmi, s.Path("gnmi"), *sw.mutable_gnmi()));
      }
      if (auto chassis = s.Get("chassis_id")) {
        ASSIGN_OR_RETURN(std::string value,
                         ReadString(*chassis, s.Path("chassis_id")));
        sw.set_chassis_id(std::move(value));
      }
      ++i;
    }
  }
  if (auto links = f.Get("links")) {
    RETURN_IF_ERROR(CheckList(*links, "links", kMaxTopologyLinks));
    size_t i = 0;
    for (const YAML::Node& item : *links) {
      ASSIGN_OR_RETURN(yaml::Fields l,
                       ReadFields(item, Index("links", i),
                                  {"host", "nic", "switch", "port"}));
      v1::Link& link = *out.add_links();
      using Setter = void (v1::Link::*)(const std::string&);
      const std::pair<absl::string_view, Setter> strs[] = {
          {"host", &v1::Link::set_host},
          {"nic", &v1::Link::set_nic},
          {"switch", &v1::Link::set_switch_},
          {"port", &v1::Link::set_port},
      };
      for (const auto& [key, setter] : strs) {
        ASSIGN_OR_RETURN(YAML::Node v, l.Require(key));
        ASSIGN_OR_RETURN(std::string value, ReadString(v, l.Path(key)));
        (link.*setter)(value);
      }
      ++i;
    }
  }
  if (auto links = f.Get("switch_links")) {
    RETURN_IF_ERROR(CheckList(*links, "switch_links", kMaxTopologyLinks));
    size_t i = 0;
    for (const YAML::Node& item : *links) {
      ASSIGN_OR_RETURN(
          yaml::Fields l,
          ReadFields(item, Index("switch_links", i),
                     {"switch_a", "port_a", "switch_b", "port_b"}));
      v1::SwitchLink& link = *out.add_switch_links();
      using Setter = void (v1::SwitchLink::*)(const std::string&);
      const std::pair<absl::string_view, Setter> strs[] = {
          {"switch_a", &v1::SwitchLink::set_switch_a},
          {"port_a", &v1::SwitchLink::set_port_a},
          {"switch_b", &v1::SwitchLink::set_switch_b},
          {"port_b", &v1::SwitchLink::set_port_b},
      };
      for (const auto& [key, setter] : strs) {
        ASSIGN_OR_RETURN(YAML::Node v, l.Require(key));
        ASSIGN_OR_RETURN(std::string value, ReadString(v, l.Path(key)));
        (link.*setter)(value);
      }
      ++i;
    }
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& message,
                   bool print_empty = true) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Zeros matter in a layout (rank 0, gpu 0): print them, so the output
  // reads back.
  options.always_print_primitive_fields = print_empty;
  std::string out;
  // Cannot fail for a message without Any (its maps have string keys).
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace

absl::StatusOr<v1::Layout> ParseLayout(absl::string_view text) {
  ASSIGN_OR_RETURN(YAML::Node root,
                   yaml::LoadDocument(text, "layout", DocumentLimits()));
  try {
    return LayoutFromNode(root);
  } catch (const std::exception& e) {
    // Node accessors do not throw for the types checked above; be safe.
    return FieldError("layout", absl::StrCat("cannot be read: ", e.what()));
  }
}

absl::StatusOr<v1::Topology> ParseTopology(absl::string_view text) {
  ASSIGN_OR_RETURN(YAML::Node root,
                   yaml::LoadDocument(text, "topology", TopologyLimits()));
  v1::Topology topology;
  try {
    ASSIGN_OR_RETURN(topology, TopologyFromNode(root));
  } catch (const std::exception& e) {
    return FieldError("topology", absl::StrCat("cannot be read: ", e.what()));
  }
  RETURN_IF_ERROR(ValidateTopology(topology));
  return topology;
}

namespace {

// switch name -> index in switches.
using SwitchIndex = absl::flat_hash_map<std::string, int>;
// (switch, port) -> the field that used it first.
using PortUses =
    absl::flat_hash_map<std::pair<std::string, std::string>, std::string>;

// An LLDP chassis id as a switch announces it (a MAC address, an IP address
// or a locally assigned text, at most 255 bytes per the TLV): printable, and
// unique across switches regardless of case, since it names one switch.
// Empty: none. `seen` maps the lower-cased ids met so far to their field.
absl::Status ValidateChassisId(
    const std::string& id, const std::string& path,
    absl::flat_hash_map<std::string, std::string>* seen) {
  if (id.empty()) return absl::OkStatus();
  const bool printable = std::all_of(
      id.begin(), id.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  if (id.size() > 255 || !printable || id.front() == ' ' || id.back() == ' ') {
    return FieldError(path, absl::StrCat(QuoteForMessage(id),
                                         " is not a chassis id (1 to 255 "
                                         "printable characters)"));
  }
  auto [it, fresh] = seen->emplace(absl::AsciiStrToLower(id), path);
  if (!fresh) {
    return FieldError(
        path, absl::StrCat(QuoteForMessage(id),
                           " is already the chassis id of ", it->second));
  }
  return absl::OkStatus();
}

// Names, gNMI targets and uplinks of the switches; fills `switch_index` and
// the uplinks' entries of `ports`.
absl::Status ValidateSwitches(const v1::Topology& topology,
                              SwitchIndex* switch_index, PortUses* ports) {
  absl::flat_hash_map<std::string, std::string> chassis_ids;
  for (int i = 0; i < topology.switches_size(); ++i) {
    const v1::Switch& sw = topology.switches(i);
    const std::string path = Index("switches", static_cast<size_t>(i));
    if (!IsValidNodeName(sw.name())) {
      return FieldError(
          path + ".name",
          absl::StrCat(QuoteForMessage(sw.name()),
                       " is not a valid switch name (", kNodeNamePattern, ")"));
    }
    auto [it, fresh] = switch_index->emplace(sw.name(), i);
    if (!fresh) {
      return FieldError(
          path + ".name",
          absl::StrCat(QuoteForMessage(sw.name()),
                       " is listed twice (also switches[", it->second, "])"));
    }
    if (sw.has_gnmi()) {
      RETURN_IF_ERROR(ValidateGnmiTarget(sw.gnmi(), path + ".gnmi"));
    }
    RETURN_IF_ERROR(
        ValidateChassisId(sw.chassis_id(), path + ".chassis_id", &chassis_ids));
    for (int u = 0; u < sw.uplinks_size(); ++u) {
      const std::string upath =
          Index(path + ".uplinks", static_cast<size_t>(u));
      if (!IsValidDeviceName(sw.uplinks(u))) {
        return FieldError(upath, absl::StrCat(QuoteForMessage(sw.uplinks(u)),
                                              " is not a valid port name (",
                                              kDeviceNamePattern, ")"));
      }
      auto [pit, pfresh] =
          ports->emplace(std::make_pair(sw.name(), sw.uplinks(u)), upath);
      if (!pfresh) {
        return FieldError(upath,
                          absl::StrCat(QuoteForMessage(sw.uplinks(u)),
                                       " is already used by ", pit->second));
      }
    }
  }
  return absl::OkStatus();
}

// Each link names a valid host NIC, a listed switch and a port of it; no NIC
// and no switch port is linked twice (uplinks included).
absl::Status ValidateLinks(const v1::Topology& topology,
                           const SwitchIndex& switch_index, PortUses* ports) {
  absl::flat_hash_map<std::pair<std::string, std::string>, int> host_nics;
  for (int i = 0; i < topology.links_size(); ++i) {
    const v1::Link& link = topology.links(i);
    const std::string path = Index("links", static_cast<size_t>(i));
    if (!IsValidNodeName(link.host())) {
      return FieldError(path + ".host",
                        absl::StrCat(QuoteForMessage(link.host()),
                                     " is not a valid host name"));
    }
    if (!IsValidDeviceName(link.nic())) {
      return FieldError(path + ".nic",
                        absl::StrCat(QuoteForMessage(link.nic()),
                                     " is not a valid NIC name"));
    }
    if (!switch_index.contains(link.switch_())) {
      return FieldError(path + ".switch",
                        absl::StrCat(QuoteForMessage(link.switch_()),
                                     " is not in switches (list it, with no "
                                     "uplinks if they are unknown)"));
    }
    if (!IsValidDeviceName(link.port())) {
      return FieldError(path + ".port",
                        absl::StrCat(QuoteForMessage(link.port()),
                                     " is not a valid port name"));
    }
    auto [hit, hfresh] =
        host_nics.emplace(std::make_pair(link.host(), link.nic()), i);
    if (!hfresh) {
      return FieldError(
          path, absl::StrCat(link.host(), " ", link.nic(),
                             " is already linked by links[", hit->second, "]"));
    }
    auto [pit, pfresh] =
        ports->emplace(std::make_pair(link.switch_(), link.port()), path);
    if (!pfresh) {
      return FieldError(path + ".port",
                        absl::StrCat(link.switch_(), " ", link.port(),
                                     " is already used by ", pit->second));
    }
  }
  return absl::OkStatus();
}

// Each switch link joins two ports of listed switches; a port is used by one
// switch link at most and by no host link (an uplink is a port towards
// another switch: it may, and usually does, have a switch link).
absl::Status ValidateSwitchLinks(const v1::Topology& topology,
                                 const SwitchIndex& switch_index,
                                 const PortUses& ports) {
  PortUses used;
  for (int i = 0; i < topology.switch_links_size(); ++i) {
    const v1::SwitchLink& link = topology.switch_links(i);
    const std::string path = Index("switch_links", static_cast<size_t>(i));
    const std::pair<const char*, const std::string*> ends[2][2] = {
        {{"switch_a", &link.switch_a()}, {"port_a", &link.port_a()}},
        {{"switch_b", &link.switch_b()}, {"port_b", &link.port_b()}},
    };
    for (const auto& [sw, port] : ends) {
      const std::string sw_path = absl::StrCat(path, ".", sw.first);
      const std::string port_path = absl::StrCat(path, ".", port.first);
      if (!switch_index.contains(*sw.second)) {
        return FieldError(sw_path, absl::StrCat(QuoteForMessage(*sw.second),
                                                " is not in switches"));
      }
      if (!IsValidDeviceName(*port.second)) {
        return FieldError(port_path, absl::StrCat(QuoteForMessage(*port.second),
                                                  " is not a valid port name (",
                                                  kDeviceNamePattern, ")"));
      }
      const auto key = std::make_pair(*sw.second, *port.second);
      auto host = ports.find(key);
      if (host != ports.end() && absl::StartsWith(host->second, "links[")) {
        return FieldError(
            port_path, absl::StrCat(*sw.second, " ", *port.second,
                                    " is cabled to a host by ", host->second));
      }
      auto [it, fresh] = used.emplace(key, port_path);
      if (!fresh) {
        return FieldError(port_path,
                          absl::StrCat(*sw.second, " ", *port.second,
                                       " is already used by ", it->second));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTopology(const v1::Topology& topology) {
  SwitchIndex switch_index;
  PortUses ports;
  RETURN_IF_ERROR(ValidateSwitches(topology, &switch_index, &ports));
  RETURN_IF_ERROR(ValidateLinks(topology, switch_index, &ports));
  return ValidateSwitchLinks(topology, switch_index, ports);
}

absl::Status ValidateGnmiTarget(const v1::GnmiTarget& gnmi,
                                absl::string_view path) {
  const auto field = [path](absl::string_view key) {
    return absl::StrCat(path, ".", key);
  };
  // HOST:PORT, HOST a DNS name, an IPv4 address or [IPv6].
  const std::string& address = gnmi.address();
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  absl::string_view host = colon == std::string::npos
                               ? absl::string_view()
                               : absl::string_view(address).substr(0, colon);
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  if (colon == std::string::npos || host.empty() || host.size() > 253 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) ||
      port == 0 || port > 65535 ||
      host.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
                             "wxyz0123456789.-:") != absl::string_view::npos) {
    return FieldError(field("address"),
                      absl::StrCat(QuoteForMessage(address),
                                   " is not HOST:PORT (port 1..65535)"));
  }
  if (gnmi.dialect() != "openconfig" && gnmi.dialect() != "sonic") {
    return FieldError(
        field("dialect"),
        gnmi.dialect().empty()
            ? std::string("required: openconfig or sonic")
            : absl::StrCat(QuoteForMessage(gnmi.dialect()),
                           " is not a dialect (openconfig or sonic)"));
  }
  if (gnmi.insecure()) {
    if (!gnmi.tls_ca().empty()) {
      return FieldError(field("tls_ca"),
                        "given with insecure: true (plaintext has no CA)");
    }
    if (!gnmi.credentials_file().empty()) {
      return FieldError(field("credentials_file"),
                        "credentials are sent only over TLS; remove "
                        "insecure: true and give tls_ca");
    }
  } else if (gnmi.tls_ca().empty()) {
    return FieldError(field("tls_ca"),
                      "required: without a CA the connection is refused "
                      "(insecure: true is for tests only)");
  }
  const std::pair<absl::string_view, const std::string*> files[] = {
      {"tls_ca", &gnmi.tls_ca()},
      {"credentials_file", &gnmi.credentials_file()},
  };
  for (const auto& [key, value] : files) {
    if (!value->empty() && (*value)[0] != '/') {
      return FieldError(field(key), absl::StrCat(QuoteForMessage(*value),
                                                 " is not an absolute path"));
    }
  }
  if (!gnmi.tls_server_name().empty() &&
      !IsValidNodeName(gnmi.tls_server_name())) {
    return FieldError(field("tls_server_name"),
                      absl::StrCat(QuoteForMessage(gnmi.tls_server_name()),
                                   " is not a host name"));
  }
  return absl::OkStatus();
}

std::string LayoutToJson(const v1::Layout& layout) {
  std::string json = ToJson(layout);
  // Where the collector says a rank's NIC came from is no field of the
  // file: left out when not set (every layout but a resolved one).
  // Nor are labels when there are none: the layouts of before labels
  // print as they did.
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return json;
  if (layout.labels().empty()) doc.erase("labels");
  if (doc.contains("ranks")) {
    for (nlohmann::ordered_json& rank : doc["ranks"]) {
      for (const char* key : {"nic_source", "nic_distance"}) {
        if (rank.is_object() && rank.value(key, "x").empty()) rank.erase(key);
      }
    }
  }
  return doc.dump();
}

std::string TopologyToJson(const v1::Topology& topology, TopologyJson what) {
  // A topology has no zero that matters (every number is derived), and an
  // empty field is one that was not given: leaving them out keeps
  // `chassis_id: ""` and `tier: 0` off every switch.
  if (what == TopologyJson::kWithDerived) {
    return ToJson(topology, /*print_empty=*/false);
  }
  // The file has no tier and no source: they are derived, never declared.
  v1::Topology file = topology;
  for (v1::Switch& sw : *file.mutable_switches()) sw.clear_tier();
  for (v1::Link& link : *file.mutable_links()) link.clear_source();
  for (v1::SwitchLink& link : *file.mutable_switch_links()) {
    link.clear_source();
  }
  return ToJson(file, /*print_empty=*/false);
}

}  // namespace fabricdiag::analysis
