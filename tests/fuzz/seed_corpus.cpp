// Writes the seed corpus of the fuzz targets: small, valid inputs made by the real writers.
//   fuzz_seed_corpus <source dir> <out dir>   ->  <out dir>/<target>/<name>
// The committed tests/fuzz/corpus/ is its output (scripts/fuzz.sh --seed-corpus rewrites it):
//   config        sample_configs/**/*.toml, tests/data/tiny.toml, the fully resolved default
//                 config, a dotted-key / inline-table config, and configs with --set overrides
//                 (NUL-separated after the text, as fuzz_config.cpp reads them)
//   cluster       sample_configs/clusters/*.toml and the resolved default [cluster] section
//   safetensors   write_safetensors files: two tensors with metadata, an empty tensor, none
//   bin_shard     write_bin_shard shards: version 1, version 2, no tokens
//   step_records  a block-count byte + encode_rank_records buffers: spans, traffic and routing
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/data/bin_shard.h"
#include "moebench/train/safetensors.h"
#include "moebench/train/step_records_codec.h"

namespace fs = std::filesystem;
using namespace moebench;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", p.c_str(), bytes.size());
}

// Bytes of a file written by one of the core's writers to a scratch path.
template <class F>
std::string written_by(const fs::path& scratch, F write) {
  fs::create_directories(scratch.parent_path());
  write(scratch.string());
  std::string bytes = read_file(scratch);
  fs::remove(scratch);
  return bytes;
}

std::string with_sets(std::string text, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    text += '\0';
    text += s;
  }
  return text;
}

void cluster_seeds(const fs::path& src, const fs::path& out) {
  for (const auto& e : fs::directory_iterator(src / "sample_configs/clusters"))
    write_file(out / e.path().filename(), read_file(e.path()));
  // The [cluster] section of the fully resolved default config, less `file`.
  const std::string all = config_to_toml(Config{});
  const size_t begin = all.find("[cluster]"), end = all.find("\n[", begin + 1);
  std::string section = all.substr(begin, end - begin + 1);
  const size_t file = section.find("\nfile = ");
  section.erase(file + 1, section.find('\n', file + 1) - file);
  write_file(out / "resolved_defaults.toml", section);
}

void config_seeds(const fs::path& src, const fs::path& out) {
  std::vector<fs::path> files = {src / "sample_configs/quickstart.toml", src / "tests/data/tiny.toml"};
  for (const auto& e : fs::directory_iterator(src / "sample_configs/models")) files.push_back(e.path());
  for (const auto& f : files) write_file(out / f.filename(), read_file(f));
  write_file(out / "resolved_defaults.toml", config_to_toml(Config{}));
  write_file(out / "dotted_and_inline.toml",
             "run = { name = \"inline\", seed = 7 }\nmodel.hidden = 64\nmodel.heads = 4\n"
             "[moe]\nmoe_layers = [\n  1,  # one\n  3,\n]\nexperts = [4, 2]\n"
             "[data]\nsource = 'synthetic'\n[store]\ndb = \"\"\"runs.db\"\"\"\n");
  const std::string quickstart = read_file(src / "sample_configs/quickstart.toml");
  write_file(out / "quickstart_with_sets", with_sets(quickstart, {"moe.top_k=1", "train.lr=1e-3",
                                                                  "moe.moe_layers=[0,2]", "data.source=text"}));
  write_file(out / "empty_with_sets", with_sets("", {"model.hidden=64", "run.name=\"a b\"", "strategy.name=janus",
                                                     "moe.experts=[2,4]", "moe.routing=zipf:1.2"}));
}

void safetensors_seeds(const fs::path& out) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {-1.5f, 0.25f, 1e-3f, 7};
  write_file(out / "two_tensors_with_metadata.safetensors", written_by(out / "tmp", [&](const std::string& p) {
               write_safetensors(p, {{"embed.wte", {2, 3}, a.data()}, {"ln_f.weight", {4}, b.data()}},
                                 {{"step", "12"}, {"config", "{\"model\": {\"hidden\": 4}}"}});
             }));
  write_file(out / "empty_tensor.safetensors", written_by(out / "tmp", [&](const std::string& p) {
               write_safetensors(p, {{"empty", {0, 3}, nullptr}, {"scalar", {}, b.data()}});
             }));
  write_file(out / "no_tensors.safetensors",
             written_by(out / "tmp", [&](const std::string& p) { write_safetensors(p, {}); }));
}

void bin_shard_seeds(const fs::path& out) {
  const std::vector<int32_t> tokens = {0, 1, 2, 255, 256, 65535, 7, 7, 42, 3};
  write_file(out / "v1_ten_tokens.bin",
             written_by(out / "tmp", [&](const std::string& p) { write_bin_shard(p, tokens, 1); }));
  write_file(out / "v2_ten_tokens.bin", written_by(out / "tmp", [&](const std::string& p) {
               std::vector<int32_t> wide = tokens;
               wide.back() = 1 << 20;
               write_bin_shard(p, wide, 2);
             }));
  write_file(out / "v1_no_tokens.bin", written_by(out / "tmp", [&](const std::string& p) { write_bin_shard(p, {}, 1); }));
}

void step_records_seeds(const fs::path& out) {
  Span fwd;
  fwd.rank = 1;
  fwd.role = StreamRole::compute;
  fwd.name = "block1.moe.expert_ffn";
  fwd.start = 0.5;
  fwd.end = 1.25;
  fwd.layer = 1;
  fwd.expert = 3;
  fwd.step = 10;
  Span a2a = fwd;
  a2a.role = StreamRole::comm_inter;
  a2a.name = "block1.moe.dispatch";
  a2a.category = TaskCategory::comm;
  a2a.bytes = 4096;
  a2a.peer = 2;
  auto seed = [&](const char* name, uint8_t blocks, const std::vector<Span>& spans,
                  const std::vector<uint64_t>& traffic, const std::vector<std::vector<int>>& routing,
                  const std::vector<std::vector<StrategyDecision>>& decisions = {}) {
    const std::vector<uint8_t> buf = encode_rank_records(spans, traffic, routing, decisions);
    std::string bytes(1, (char)blocks);
    bytes.append(buf.begin(), buf.end());
    write_file(out / name, bytes);
  };
  seed("two_spans_two_blocks", 2, {fwd, a2a}, {0, 4096, 128, 0}, {{5, 0, 7, 4}, {1, 1, 1, 13}},
       {{}, {{"monta.level", 2}, {"monta.chunks", 4}}});
  seed("no_spans_one_block", 1, {}, {0, 64}, {{3, 3}});
  seed("dense_model", 0, {fwd}, {0}, {});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seed_corpus <source dir> <out dir>\n");
    return 2;
  }
  const fs::path src = argv[1], out = argv[2];
  config_seeds(src, out / "config");
  cluster_seeds(src, out / "cluster");
  safetensors_seeds(out / "safetensors");
  bin_shard_seeds(out / "bin_shard");
  step_records_seeds(out / "step_records");
  return 0;
}
