// ctest-labels: unit
// The files a config names and the config bundled with them (config_files.h): the path keys of
// the schema, values from sections, dotted keys and overrides resolved like the loader does,
// which paths a config really reads, unique names in the bundle, the rewritten text loading in
// the bundle folder with every path pointing at the copies, and one error naming every missing
// file.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moebench/config/config_files.h"
#include "moebench/config/config_loader.h"

using namespace moebench;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

const ConfigPathRef* find(const std::vector<ConfigPathRef>& refs, const std::string& key) {
  for (const auto& r : refs)
    if (r.key == key) return &r;
  return nullptr;
}

const ConfigBundleFile* file_named(const ConfigBundle& b, const std::string& name) {
  for (const auto& f : b.files)
    if (f.name == name) return &f;
  return nullptr;
}

// A small config that trains on a text file (byte tokens): tests/data/tiny.toml's model.
std::string text_config(const std::string& data_path, const std::string& cluster_file) {
  return "# a comment that must survive\n"
         "[run]\nname = \"bundled\"\nthreads = 1\n"
         "[cluster]\nfile = \"" + cluster_file + "\"  # the cluster\n"
         "[model]\nvocab_size = 256\nseq_len = 16\nhidden = 32\nlayers = 2\nheads = 2\nffn_mult = 2\n"
         "[moe]\nmoe_layers = [1]\nexperts = 4\n"
         "[data]\nsource = \"text\"\npath = \"" + data_path + "\"\n"
         "[train]\nsteps = 3\nbatch_size = 2\n";
}

std::string corpus() {
  std::string s;
  for (int i = 0; i < 200; ++i) s += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

class TestConfigFiles : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  fs::path root() const { return fs::path(m_tmp.path().toStdString()); }

 private slots:
  void initTestCase() { QVERIFY(m_tmp.isValid()); }

  void pathKeysAreTheSchemasPathKeys() {
    const std::vector<std::string> expected{"cluster.file", "data.path", "data.val_path", "emulate.cluster",
                                            "storage.ssd_dir"};
    QCOMPARE(config_path_keys(), expected);
    for (const auto& k : expected) QVERIFY(is_config_path_key(k));
    QVERIFY(!is_config_path_key("store.db"));  // relative to the current directory, written by the run
    QVERIFY(!is_config_path_key("run.out_dir"));
    QVERIFY(!is_config_path_key(""));
  }

  void refsResolveLikeTheLoader() {
    const std::string text =
        "cluster.file = \"clusters/c.toml\"\n"  // a dotted key at the top level
        "[data]\nsource = 'bin'\npath = \"../shards/train.bin\"\nval_path = \"/abs/val.bin\"\n"
        "[emulate]\ncluster = \"\"\n";  // empty: off, not a file
    const auto refs = config_path_refs(text, "/home/u/cfg");
    QCOMPARE(refs.size(), size_t(3));
    QCOMPARE(refs[0].key, std::string("cluster.file"));
    QCOMPARE(refs[0].value, std::string("clusters/c.toml"));
    QCOMPARE(refs[0].path, std::string("/home/u/cfg/clusters/c.toml"));
    QVERIFY(refs[0].used && !refs[0].directory && !refs[0].from_override);
    QCOMPARE(refs[1].path, std::string("/home/u/shards/train.bin"));
    QVERIFY(refs[1].used);
    QCOMPARE(refs[2].path, std::string("/abs/val.bin"));

    // Overrides replace the text's value, resolved against their own folder; the last one wins.
    const auto o = config_path_refs(text, "/home/u/cfg",
                                    {"cluster.file=first.toml", "cluster.file=\"other dir/c.toml\"", "train.lr=1e-3"},
                                    "/work");
    const ConfigPathRef* c = find(o, "cluster.file");
    QVERIFY(c && c->from_override);
    QCOMPARE(c->value, std::string("other dir/c.toml"));
    QCOMPARE(c->path, std::string("/work/other dir/c.toml"));
  }

  void onlyReadPathsAreUsed() {
    const std::string text = "[data]\npath = \"x.bin\"\n[storage]\nssd_dir = \"states\"\n";
    auto refs = config_path_refs(text, "/c");  // synthetic data, memory storage: neither is read
    QCOMPARE(refs.size(), size_t(2));
    QVERIFY(!find(refs, "data.path")->used);
    QVERIFY(!find(refs, "storage.ssd_dir")->used);
    QVERIFY(find(refs, "storage.ssd_dir")->directory);
    refs = config_path_refs(text, "/c", {"data.source=text", "storage.sparse=ssd"});
    QVERIFY(find(refs, "data.path")->used);
    QVERIFY(find(refs, "storage.ssd_dir")->used);
  }

  void refsRejectWhatIsNotAPath() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, config_path_refs("[cluster\nfile = 1", "."));
    try {
      config_path_refs("[cluster]\nfile = 3\n", ".");
      QFAIL("no exception");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("cluster.file") != std::string::npos, e.what());
    }
  }

  void bundleRewritesAndLoadsInItsFolder() {
    const fs::path local = root() / "local side" / "it's \"cfg\"";
    write(local / "run.toml", "");
    write(local / "../data dir/corpus's.txt", corpus());
    write(local / "c.toml", "[cluster]\nname = \"bundled cluster\"\n");
    const std::string text = text_config("../data dir/corpus's.txt", "c.toml");
    write(local / "run.toml", text);

    const ConfigBundle b = bundle_config(text, (local / "run.toml").string(), {"train.steps=2", "data.val_path="});
    QCOMPARE(b.config_name, std::string("run.toml"));
    QCOMPARE(b.files.size(), size_t(2));
    const ConfigBundleFile* cluster = file_named(b, "c.toml");
    const ConfigBundleFile* data = file_named(b, "corpus's.txt");
    QVERIFY(cluster && data);
    QCOMPARE(cluster->source, (local / "c.toml").lexically_normal().string());
    QCOMPARE(cluster->keys, std::vector<std::string>{"cluster.file"});
    QCOMPARE(data->source, (local.parent_path() / "data dir" / "corpus's.txt").lexically_normal().string());
    QCOMPARE(b.overrides, std::vector<std::string>{"train.steps=2"});  // path overrides are in the text
    QVERIFY(b.directories.empty());
    // The text changed only in the path values (comments kept).
    QVERIFY(b.config_text.find("# a comment that must survive\n") == 0);
    QVERIFY(b.config_text.find("file = \"c.toml\"  # the cluster\n") != std::string::npos);
    QVERIFY(b.config_text.find("path = \"corpus's.txt\"\n") != std::string::npos);

    // The bundle folder elsewhere, the originals gone: it loads, every path inside it.
    const fs::path folder = root() / "elsewhere" / "run 1";
    fs::create_directories(folder);
    for (const auto& f : b.files) fs::copy_file(f.source, folder / f.name);
    write(folder / b.config_name, b.config_text);
    fs::rename(root() / "local side", root() / "local side moved");
    const Config c = load_config((folder / b.config_name).string(), b.overrides);
    QCOMPARE(c.cluster.file, (folder / "c.toml").string());
    QCOMPARE(c.cluster.name, std::string("bundled cluster"));
    QCOMPARE(c.data.path, (folder / "corpus's.txt").string());
    QCOMPARE(c.data.val_path, std::string());
    QCOMPARE(c.train.steps, 2);
    QCOMPARE(c.run.name, std::string("bundled"));
    fs::rename(root() / "local side moved", root() / "local side");
  }

  void oneCopyPerFileAndUniqueNames() {
    const fs::path d = root() / "names";
    write(d / "a" / "c.toml", "[cluster]\nname = \"a\"\n");
    write(d / "b" / "c.toml", "[cluster]\nname = \"b\"\n");
    write(d / "data.bin", std::string(64, '\0'));
    write(d / "line\nbreak.bin", std::string(64, '\0'));
    // The config is itself called c.toml; cluster.file and emulate.cluster name one file by two spellings.
    const std::string text =
        "[cluster]\nfile = \"a/c.toml\"\n[emulate]\ncluster = \"b/../a/c.toml\"\n"
        "[data]\nsource = \"bin\"\npath = \"data.bin\"\nval_path = \"line\\nbreak.bin\"\n"
        "[storage]\nsparse = \"ssd\"\nssd_dir = \"c.toml\"\n";
    const ConfigBundle b = bundle_config(text, (d / "c.toml").string(), {"data.path=b/c.toml"}, d.string());
    QCOMPARE(b.config_name, std::string("c.toml"));
    QCOMPARE(b.files.size(), size_t(3));
    QCOMPARE(b.files[0].name, std::string("c-2.toml"));
    QCOMPARE(b.files[0].source, (d / "a" / "c.toml").string());
    QCOMPARE(b.files[0].keys, (std::vector<std::string>{"cluster.file", "emulate.cluster"}));
    QCOMPARE(b.files[1].name, std::string("c-3.toml"));  // data.path by --set: b/c.toml
    QCOMPARE(b.files[1].keys, std::vector<std::string>{"data.path"});
    QCOMPARE(b.files[2].name, std::string("line_break.bin"));
    QCOMPARE(b.directories, std::vector<std::string>{"c-4.toml"});  // the run's empty state folder
    QVERIFY(b.overrides.empty());
    for (const char* line : {"file = \"c-2.toml\"", "cluster = \"c-2.toml\"", "path = \"c-3.toml\"",
                             "val_path = \"line_break.bin\"", "ssd_dir = \"c-4.toml\""})
      QVERIFY2(b.config_text.find(line) != std::string::npos, line);
  }

  void unusedAndAbsoluteFoldersStayAsWritten() {
    const std::string text = "[data]\npath = \"nowhere.bin\"\n[storage]\nsparse = \"ssd\"\nssd_dir = \"/nvme/states\"\n";
    const ConfigBundle b = bundle_config(text, (root() / "u.toml").string(), {"data.val_path=gone.bin"});
    QVERIFY(b.files.empty());  // synthetic data: the data paths are not read, so not needed
    QVERIFY(b.directories.empty());
    QVERIFY(b.config_text.find("path = \"nowhere.bin\"") != std::string::npos);
    QVERIFY(b.config_text.find("ssd_dir = \"/nvme/states\"") != std::string::npos);
    QVERIFY(b.config_text.find("val_path = \"gone.bin\"") != std::string::npos);  // the override, folded in
  }

  void clearingOverrideIsFoldedIn() {
    write(root() / "clear" / "c.toml", "[cluster]\n");
    const std::string text = "[cluster]\nfile = \"c.toml\"\n";
    const ConfigBundle b = bundle_config(text, (root() / "clear" / "x.toml").string(), {"cluster.file=\"\""});
    QVERIFY(b.files.empty());
    QVERIFY(b.config_text.find("file = \"\"") != std::string::npos);
  }

  void missingFilesAreNamedTogether() {
    const fs::path d = root() / "missing";
    fs::create_directories(d / "a dir.bin");
    const std::string text = "[cluster]\nfile = \"gone.toml\"\n[data]\nsource = \"bin\"\npath = \"a dir.bin\"\n";
    try {
      bundle_config(text, (d / "m.toml").string(), {"emulate.cluster=/no/such/e.toml"});
      QFAIL("no exception");
    } catch (const ConfigBundleError& e) {
      QCOMPARE(e.problems().size(), size_t(3));
      QCOMPARE(e.problems()[0], "cluster.file: file not found: " + (d / "gone.toml").string() + " (m.toml)");
      QCOMPARE(e.problems()[1], "data.path: " + (d / "a dir.bin").string() + " is a directory, not a file (m.toml)");
      QCOMPARE(e.problems()[2], std::string("emulate.cluster: file not found: /no/such/e.toml (--set)"));
      QVERIFY(std::string(e.what()).find("; ") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestConfigFiles)
#include "tst_config_files.moc"
