#pragma once
// The rule for every file a command writes (trace -o, calibrate --out, plan --write-config;
// export --csv applies it to each of its files, store/csv_export.h): an existing file is
// refused unless --force replaces it (exit 2, nothing written), a folder or a path too long
// for the filesystem is refused always. Checked before any work starts.
#include <string>

namespace moebench::cli {

// Throws UsageError: "trace -o keep.json exists; pass --force to replace it (or write another
// file)". `what` names the command and flag ("trace -o").
void check_output_file(const std::string& what, const std::string& path, bool force);

}  // namespace moebench::cli
