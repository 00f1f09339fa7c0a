// moebench validate CONFIG [--set key=value]... [--ranks N] [--json]: prints the resolved config
// or every error. Rules that depend on the rank count (batch and experts over the ranks, nodes)
// are checked for run.ranks (--ranks N sets it), exactly as `moebench run` checks them.
// moebench validate --doc: the configuration reference (docs/configuration.md) from the schema.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/config_reference.h"

namespace moebench::cli {

void add_validate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("validate", "Check a config and print it fully resolved");
  auto config = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto ranks = std::make_shared<int>(0);
  auto doc = std::make_shared<bool>(false);
  auto* config_opt = cmd->add_option("config", *config, "TOML config file");
  auto* set_opt = cmd->add_option("--set", *sets, "Override a key, e.g. --set moe.top_k=1 (repeatable)");
  auto* ranks_opt = cmd->add_option("--ranks", *ranks, "Check for this many ranks (sets run.ranks)")->transform(positive());
  auto* json_opt = cmd->add_flag("--json", *json, "Print canonical JSON instead of TOML");
  cmd->add_flag("--doc", *doc, "Print the configuration reference (Markdown, every key) instead; takes no config")
      ->excludes(config_opt)
      ->excludes(set_opt)
      ->excludes(ranks_opt)
      ->excludes(json_opt);
  cmd->callback([&action, cmd, config, sets, json, ranks, doc] {
    if (*doc) {
      action = [] {
        std::cout << config_reference_markdown();
        return 0;
      };
      return;
    }
    if (cmd->count("config") == 0) throw CLI::RequiredError("config");
    action = [config, sets, json, ranks] {
      std::vector<std::string> all = *sets;
      if (*ranks > 0) all.push_back("run.ranks=" + std::to_string(*ranks));
      const Config cfg = load_config(*config, all);
      if (*json) std::cout << config_to_json(cfg).dump(2) << "\n";
      else std::cout << config_to_toml(cfg);
      std::fprintf(stderr, "%s: OK\n", config->c_str());
      return 0;
    };
  });
}

}  // namespace moebench::cli
