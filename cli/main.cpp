// moebench: the command-line entry point (cli/entry.cpp).
#include "commands.h"

int main(int argc, char** argv) { return moebench::cli::run_cli(argc, argv); }
