// moebench export RUN --csv DIR [--db PATH] [--force]: a run's info, params, tags, metrics,
// spans, traffic and routing as CSV files in DIR (layout in csv_export.h). All seven files or
// none: existing files of these names are refused (exit 2) unless --force replaces them.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "run_db.h"
#include "moebench/store/csv_export.h"

namespace moebench::cli {

void add_export_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("export", "Export a run as CSV files");
  auto ref = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>(kDefaultRunDb);
  auto dir = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  cmd->add_option("run", *ref, "Run id, uuid (prefix) or name")->required();
  cmd->add_option("--csv", *dir, "Folder to write run.csv, params.csv, tags.csv, metrics.csv, spans.csv, "
                                 "traffic.csv and routing.csv into (created when missing)")
      ->required();
  cmd->add_option("--db", *db, "Run database (default: runs.db in the current directory)");
  cmd->add_flag("--force", *force, "Replace existing files of these names in the folder");
  cmd->callback([&action, ref, db, dir, force] {
    action = [ref, db, dir, force] {
      return with_run_db(*db, [&] {
        auto store = open_run_db(*db, RunStore::Mode::read_only);
        const RunInfo run = store->find_run(*ref);
        try {
          export_csv(*store, run, *dir, *force);
        } catch (const ExportRefused& e) {  // bad usage: the folder holds an export already
          std::fprintf(stderr, "moebench: export: %s (--force replaces them)\n", e.what());
          return 2;
        }
        std::fprintf(stderr, "run %lld (%s): wrote run.csv params.csv tags.csv metrics.csv spans.csv traffic.csv "
                             "routing.csv to %s\n",
                     static_cast<long long>(run.id), run.name.c_str(), dir->c_str());
        return 0;
      });
    };
  });
}

}  // namespace moebench::cli
