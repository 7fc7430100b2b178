#include "builtin_plugins.hpp"

namespace gpusched::policies::detail {

void register_preemption_plugins(Registry& /*r*/) {}

}  // namespace gpusched::policies::detail
