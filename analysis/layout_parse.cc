#include "analysis/layout_parse.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <exception>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_model.h"
#include "analysis/names.h"
#include "common/status_macros.h"

namespace fabricdiag::analysis {
namespace {

// The deepest a valid file nests is 4 (ranks -> [i] -> {...}); anything far
// deeper is hostile. Checked while streaming, before any node is built.
constexpr int kMaxDepth = 32;
// Scalars + collections + aliases in the event stream. yaml-cpp needs about
// 450 bytes and 4 us per node (measured: 1M list entries, 457 MB, 3.7 s), so
// this bounds the tree it builds to ~0.5 GB. It still admits hosts/rails
// layouts of kMaxRanks ranks at >= 2 GPUs per node, and explicit `ranks`
// placements (9 values per rank) of ~110,000 ranks.
constexpr uint64_t kMaxEvents = 1000 * 1000;
constexpr uint32_t kMaxListEntries = kMaxRanks;

absl::Status FieldError(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

std::string Join(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string Index(absl::string_view path, size_t i) {
  return absl::StrCat(path, "[", i, "]");
}

// What a node is, for "expected X, got Y".
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      break;
  }
  const bool quoted = node.Tag() != "?";
  return absl::StrCat(quoted ? "the string " : "",
                      QuoteForMessage(node.Scalar()));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

absl::StatusOr<uint32_t> ReadUint(const YAML::Node& node,
                                  absl::string_view path) {
  // Quoted scalars ("8") are strings: the file's author meant something else,
  // or a tool wrote the wrong type; either way, say so.
  if (!node.IsScalar() || node.Tag() != "?") {
    return FieldError(
        path, absl::StrCat("expected an integer, got ", Describe(node)));
  }
  const std::string& s = node.Scalar();
  if (s.size() > 1 && s[0] == '-' && AllDigits(s.substr(1))) {
    return FieldError(path, absl::StrCat("must not be negative, got ", s));
  }
  uint64_t value = 0;
  if (AllDigits(s)) {
    if (s.size() > 12 || !absl::SimpleAtoi(s, &value) || value > UINT32_MAX) {
      return FieldError(
          path, absl::StrCat(QuoteForMessage(s), " is too large (at most ",
                             UINT32_MAX, ")"));
    }
    return static_cast<uint32_t>(value);
  }
  double d = 0;
  if (absl::SimpleAtod(s, &d)) {
    return FieldError(
        path, absl::StrCat("expected an integer, got ", QuoteForMessage(s)));
  }
  return FieldError(path,
                    absl::StrCat("expected an integer, got ", Describe(node)));
}

absl::StatusOr<double> ReadNumber(const YAML::Node& node,
                                  absl::string_view path) {
  double d = 0;
  if (!node.IsScalar() || node.Tag() != "?" ||
      !absl::SimpleAtod(node.Scalar(), &d) || !std::isfinite(d)) {
    return FieldError(path,
                      absl::StrCat("expected a number, got ", Describe(node)));
  }
  if (d < 0) {
    return FieldError(
        path, absl::StrCat("must not be negative, got ", node.Scalar()));
  }
  return d;
}

absl::StatusOr<std::string> ReadString(const YAML::Node& node,
                                       absl::string_view path) {
  if (!node.IsScalar()) {
    return FieldError(path,
                      absl::StrCat("expected a string, got ", Describe(node)));
  }
  return node.Scalar();
}

absl::Status CheckList(const YAML::Node& node, absl::string_view path,
                       uint32_t max_entries) {
  if (!node.IsSequence()) {
    return FieldError(path,
                      absl::StrCat("expected a list, got ", Describe(node)));
  }
  if (node.size() > max_entries) {
    return FieldError(path,
                      absl::StrCat(node.size(), " entries exceed the limit of ",
                                   max_entries));
  }
  return absl::OkStatus();
}

template <typename AddFn>
absl::Status ReadStringList(const YAML::Node& node, absl::string_view path,
                            uint32_t max_entries, AddFn add) {
  RETURN_IF_ERROR(CheckList(node, path, max_entries));
  size_t i = 0;
  for (const YAML::Node& item : node) {
    ASSIGN_OR_RETURN(std::string s, ReadString(item, Index(path, i)));
    add(std::move(s));
    ++i;
  }
  return absl::OkStatus();
}

// The entries of one YAML mapping, checked against the keys it may have.
class Fields {
 public:
  static absl::StatusOr<Fields> Read(
      const YAML::Node& node, std::string path,
      std::initializer_list<absl::string_view> allowed) {
    if (!node.IsMap()) {
      return FieldError(
          path.empty() ? "layout" : path,
          absl::StrCat("expected a mapping, got ", Describe(node)));
    }
    Fields f;
    f.path_ = std::move(path);
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) {
        return FieldError(
            f.path_.empty() ? "layout" : f.path_,
            absl::StrCat("a key must be a string, got ", Describe(it->first)));
      }
      const std::string& key = it->first.Scalar();
      bool known = false;
      for (absl::string_view a : allowed) known = known || a == key;
      if (!known) {
        return FieldError(Join(f.path_, absl::CHexEscape(key.substr(0, 64))),
                          "unknown key");
      }
      // yaml-cpp keeps both entries of a repeated key; YAML forbids it.
      for (const auto& [k, v] : f.entries_) {
        if (k == key) return FieldError(Join(f.path_, key), "given twice");
      }
      f.entries_.emplace_back(key, it->second);
    }
    return f;
  }

  std::optional<YAML::Node> Get(absl::string_view key) const {
    for (const auto& [k, v] : entries_) {
      if (k == key) return v;
    }
    return std::nullopt;
  }

  absl::StatusOr<YAML::Node> Require(absl::string_view key) const {
    std::optional<YAML::Node> v = Get(key);
    if (!v.has_value()) return FieldError(Path(key), "required");
    return *v;
  }

  std::string Path(absl::string_view key) const { return Join(path_, key); }

 private:
  std::string path_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

// Streams the events of the text once, without building nodes, to bound
// nesting, size and the number of documents before yaml-cpp builds a tree.
class Prescan : public YAML::EventHandler {
 public:
  struct Abort {
    std::string message;
  };

  void OnDocumentStart(const YAML::Mark&) override {
    if (++documents_ > 1) throw Abort{"holds more than one YAML document"};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { Count(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Count(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Count();
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Count() {
    if (++events_ > kMaxEvents) {
      throw Abort{absl::StrCat("has more than ", kMaxEvents, " values")};
    }
  }
  void Enter(const YAML::Mark& mark) {
    Count();
    if (++depth_ > kMaxDepth) {
      throw Abort{absl::StrCat("nests deeper than ", kMaxDepth,
                               " levels (line ", mark.line + 1, ")")};
    }
  }

  int documents_ = 0;
  int depth_ = 0;
  uint64_t events_ = 0;
};

// Parses `text` into a tree; `what` names the document in errors.
absl::StatusOr<YAML::Node> LoadDocument(absl::string_view text,
                                        absl::string_view what) {
  if (text.size() > kMaxDocumentBytes) {
    return FieldError(
        what, absl::StrCat("the text is ", text.size(), " bytes; the limit is ",
                           kMaxDocumentBytes));
  }
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      Prescan scan;
      while (parser.HandleNextDocument(scan)) {
      }
    }
    return YAML::Load(std::string(text));
  } catch (const Prescan::Abort& e) {
    return FieldError(what, absl::StrCat("the text ", e.message));
  } catch (const YAML::Exception& e) {
    // e.what() carries the line and column.
    return FieldError(what, absl::StrCat("not valid YAML or JSON: ", e.what()));
  } catch (const std::exception& e) {
    return FieldError(what, absl::StrCat("cannot be parsed: ", e.what()));
  }
}

absl::Status ReadParallelism(const YAML::Node& node, v1::Parallelism& out) {
  ASSIGN_OR_RETURN(Fields f,
                   Fields::Read(node, "parallelism",
                                {"tp", "pp", "dp", "cp", "ep", "order"}));
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
    ASSIGN_OR_RETURN(Fields f, Fields::Read(item, Index("ranks", i),
                                            {"rank", "host", "gpu", "nic"}));
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
      Fields f,
      Fields::Read(node, "model",
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

absl::StatusOr<v1::Layout> LayoutFromNode(const YAML::Node& root) {
  ASSIGN_OR_RETURN(
      Fields f,
      Fields::Read(root, "",
                   {"job", "gpus_per_node", "nvlink_domain", "parallelism",
                    "hosts", "rails", "ranks", "model"}));
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
        ReadStringList(*hosts, "hosts", kMaxListEntries,
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
  return out;
}

absl::StatusOr<v1::Topology> TopologyFromNode(const YAML::Node& root) {
  ASSIGN_OR_RETURN(Fields f, Fields::Read(root, "", {"switches", "links"}));
  v1::Topology out;
  if (auto switches = f.Get("switches")) {
    RETURN_IF_ERROR(CheckList(*switches, "switches", kMaxListEntries));
    size_t i = 0;
    for (const YAML::Node& item : *switches) {
      ASSIGN_OR_RETURN(Fields s, Fields::Read(item, Index("switches", i),
                                              {"name", "uplinks"}));
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
      ++i;
    }
  }
  if (auto links = f.Get("links")) {
    RETURN_IF_ERROR(CheckList(*links, "links", kMaxListEntries));
    size_t i = 0;
    for (const YAML::Node& item : *links) {
      ASSIGN_OR_RETURN(Fields l,
                       Fields::Read(item, Index("links", i),
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
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Zeros matter here (rank 0, gpu 0): print them, so the output reads back.
  options.always_print_primitive_fields = true;
  std::string out;
  // Cannot fail for a message without Any or maps.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace

absl::StatusOr<v1::Layout> ParseLayout(absl::string_view text) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadDocument(text, "layout"));
  try {
    return LayoutFromNode(root);
  } catch (const std::exception& e) {
    // Node accessors do not throw for the types checked above; be safe.
    return FieldError("layout", absl::StrCat("cannot be read: ", e.what()));
  }
}

absl::StatusOr<v1::Topology> ParseTopology(absl::string_view text) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadDocument(text, "topology"));
  v1::Topology topology;
  try {
    ASSIGN_OR_RETURN(topology, TopologyFromNode(root));
  } catch (const std::exception& e) {
    return FieldError("topology", absl::StrCat("cannot be read: ", e.what()));
  }
  RETURN_IF_ERROR(ValidateTopology(topology));
  return topology;
}

absl::Status ValidateTopology(const v1::Topology& topology) {
  // switch name -> index; (switch, port) -> where it was used.
  absl::flat_hash_map<std::string, int> switch_index;
  absl::flat_hash_map<std::pair<std::string, std::string>, std::string> ports;
  for (int i = 0; i < topology.switches_size(); ++i) {
    const v1::Switch& sw = topology.switches(i);
    const std::string path = Index("switches", static_cast<size_t>(i));
    if (!IsValidHostName(sw.name())) {
      return FieldError(path + ".name",
                        absl::StrCat(QuoteForMessage(sw.name()),
                                     " is not a valid switch name "
                                     "([A-Za-z0-9._-]{1,253})"));
    }
    auto [it, fresh] = switch_index.emplace(sw.name(), i);
    if (!fresh) {
      return FieldError(
          path + ".name",
          absl::StrCat(QuoteForMessage(sw.name()),
                       " is listed twice (also switches[", it->second, "])"));
    }
    for (int u = 0; u < sw.uplinks_size(); ++u) {
      const std::string upath =
          Index(path + ".uplinks", static_cast<size_t>(u));
      if (!IsValidDeviceName(sw.uplinks(u))) {
        return FieldError(upath, absl::StrCat(QuoteForMessage(sw.uplinks(u)),
                                              " is not a valid port name "
                                              "([A-Za-z0-9._:-]{1,64})"));
      }
      auto [pit, pfresh] =
          ports.emplace(std::make_pair(sw.name(), sw.uplinks(u)), upath);
      if (!pfresh) {
        return FieldError(upath,
                          absl::StrCat(QuoteForMessage(sw.uplinks(u)),
                                       " is already used by ", pit->second));
      }
    }
  }
  absl::flat_hash_map<std::pair<std::string, std::string>, int> host_nics;
  for (int i = 0; i < topology.links_size(); ++i) {
    const v1::Link& link = topology.links(i);
    const std::string path = Index("links", static_cast<size_t>(i));
    if (!IsValidHostName(link.host())) {
      return FieldError(path + ".host",
                        absl::StrCat(QuoteForMessage(link.host()),
                                     " is not a valid host name"));
    }
    if (!IsValidDeviceName(link.nic())) {
      return FieldError(path + ".nic",
                        absl::StrCat(QuoteForMessage(link.nic()),
                                     " is not a valid NIC name"));
    }
    if (switch_index.find(link.switch_()) == switch_index.end()) {
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
        ports.emplace(std::make_pair(link.switch_(), link.port()), path);
    if (!pfresh) {
      return FieldError(path + ".port",
                        absl::StrCat(link.switch_(), " ", link.port(),
                                     " is already used by ", pit->second));
    }
  }
  return absl::OkStatus();
}

std::string LayoutToJson(const v1::Layout& layout) { return ToJson(layout); }

std::string TopologyToJson(const v1::Topology& topology) {
  return ToJson(topology);
}

}  // namespace fabricdiag::analysis
