// The `gpusched` executable for C++ installs; `pip install .` installs the same command
// through Python (gpusched._core.cli_main).
#include <gpusched/scenario/scenario.hpp>

int main(int argc, char** argv) { return gpusched::scenario::cli_main(argc, argv); }
