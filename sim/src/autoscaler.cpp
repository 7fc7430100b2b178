#include <gpusched/sim/autoscaler.hpp>
