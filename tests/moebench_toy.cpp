// moebench with the test strategy toy_exchange (toy_exchange.cpp, linked in): the CLI's entry
// unchanged, so every verb sees a strategy no core file names (tst_custom_strategy).
#include "commands.h"

int main(int argc, char** argv) { return moebench::cli::run_cli(argc, argv); }
