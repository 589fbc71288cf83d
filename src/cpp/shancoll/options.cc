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

}  // namespace shancoll
