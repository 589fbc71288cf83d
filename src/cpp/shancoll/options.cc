#include "shancoll/options.h"

#include "shancoll/error.h"
#include "shancoll/progress.h"

namespace shancoll {

double Options::wait_timeout() const { return timeout > 0 ? timeout : default_timeout(); }

const char* transport_name(TransportKind kind) {
  return kind == TransportKind::rma ? "rma" : "two_sided";
}

TransportKind parse_transport(const std::string& name) {
  if (name == "rma") return TransportKind::rma;
  if (name == "two_sided" || name == "auto") return TransportKind::two_sided;
  throw ArgumentError("transport: unknown transport '" + name + "' (valid: auto, rma, two_sided)");
}

std::string describe(const TreeUsed& t) {
  if (!t.used) return "";
  std::string out = pattern::tree_kind_name(t.shape.kind);
  if (t.shape.kind != pattern::TreeKind::flat) out += " k=" + std::to_string(t.shape.k);
  out += t.shape.right_skew ? " right" : " left";
  if (t.topology != pattern::TreeTopology::none) {
    out += std::string(", ") + pattern::tree_topology_name(t.topology) + " over " +
           std::to_string(t.sockets) + (t.sockets == 1 ? " socket (" : " sockets (") +
           t.socket_source + ")";
  }
  return out;
}

}  // namespace shancoll
