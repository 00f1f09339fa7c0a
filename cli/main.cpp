#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"moebench: a workbench for distributed Mixture-of-Experts training"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
