#pragma once
// The files a config names by path, and the config made self-contained in one folder: the
// config beside a copy of every file it reads, its path keys rewritten to those copies' names.
// `moebench launch` uploads such a folder to a remote host (cli/cmd_launch.cpp); any tool
// that moves a config to another machine can use it.
//
// Path keys are the keys of type "path" in config_keys() (config_loader.h): cluster.file,
// data.path, data.val_path, storage.ssd_dir, emulate.cluster. A relative value is resolved the
// way the loader resolves it: against the config file's folder, or for a --set override against
// the folder the command runs in. A cluster file (cluster.file, emulate.cluster) names no
// further files: it holds [cluster] keys only, and none of them is a path.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moebench {

// The config keys that hold a path, in schema order.
const std::vector<std::string>& config_path_keys();
bool is_config_path_key(std::string_view key);

// One path a config sets.
struct ConfigPathRef {
  std::string key;             // "cluster.file"
  std::string value;           // the string as written (in the text, or after `--set key=`)
  std::string path;            // value resolved: absolute and lexically normal
  bool from_override = false;  // set by an override (the last one of the key wins)
  bool directory = false;      // storage.ssd_dir: a folder the run writes into, not a file it reads
  // Whether the run reads it with this config: data.path and data.val_path only with
  // data.source "bin" or "text", storage.ssd_dir only with storage.sparse = "ssd"; cluster.file
  // and emulate.cluster always.
  bool used = true;
};

// The non-empty path values of a config text with its overrides ("key=value", as --set takes
// them: a TOML string, else the bare text), one per key in config_path_keys() order; an
// override replaces the text's value. `base_dir` resolves the text's relative paths,
// `override_dir` the overrides'. Throws std::invalid_argument when the text is not TOML (the
// parser's message with line and column) or a path key holds something other than a string.
std::vector<ConfigPathRef> config_path_refs(std::string_view text, const std::string& base_dir,
                                            const std::vector<std::string>& overrides = {},
                                            const std::string& override_dir = ".");

// A file to copy into the bundle folder.
struct ConfigBundleFile {
  std::string source;             // its path here (ConfigPathRef::path)
  std::string name;               // its file name in the folder
  std::vector<std::string> keys;  // the keys that name it (cluster.file and emulate.cluster may share one)
};

// The config as it reads inside one folder that holds it and every file it uses.
struct ConfigBundle {
  std::string config_name;              // the config's file name in the folder (its own name)
  std::string config_text;              // the text, every path override folded in, every used
                                        // file's key set to its name in the folder
  std::vector<std::string> overrides;   // the overrides left to pass on (those of other keys), in order
  std::vector<ConfigBundleFile> files;  // to copy beside the config
  std::vector<std::string> directories; // folders to create in the folder (a relative storage.ssd_dir)
};

// Thrown by bundle_config when a used file cannot be bundled; what() lists every problem, each
// naming the key and the file ("cluster.file: file not found: /data/c.toml (config.toml)").
class ConfigBundleError : public std::runtime_error {
 public:
  explicit ConfigBundleError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Bundles the config whose text is `text` and whose file is `config_path` (its folder resolves
// the text's relative paths), with its overrides (`override_dir` resolves theirs):
//  - every used file (ConfigPathRef::used, not a directory) must be a readable regular file;
//    it is copied under its own file name, made unique with "-2", "-3", ... before the
//    extension when two different files share one (the same file named by two keys is one
//    copy); control characters in names become '_';
//  - a used storage.ssd_dir with a relative value becomes an empty folder of its last name
//    (made unique likewise); an absolute one is kept as it is (a folder on the target machine);
//  - every override of a path key is written into the text (the bundle name for a used file,
//    else its value as given), the other overrides are returned in `overrides`;
//  - the rewritten values are bare names, which the loader resolves against the config's folder.
// Throws ConfigBundleError (missing or unreadable files), std::invalid_argument (see
// config_path_refs).
ConfigBundle bundle_config(std::string_view text, const std::string& config_path,
                           const std::vector<std::string>& overrides = {},
                           const std::string& override_dir = ".");

}  // namespace moebench
