// moebench infer CHECKPOINT [--prompt-file F | --prompt "IDS"] [--tokens N] [--ring K] [--json]: greedy
// generation from a training checkpoint (train/inference.h): CHECKPOINT is a checkpoint folder
// or a run folder (its latest checkpoints/step_NNNNNN, as --resume takes it).
//   prompt   --prompt-file F: a model trained on text (data.source = "text", byte-level, vocab
//            256) reads F's bytes as tokens; any other model reads whitespace-separated token
//            ids from F. --prompt "3 14 15": ids inline. Default: the single token 0.
//   --ring K MoESys's ring memory (storage/ring_memory.h): the device tier holds the dense
//            parameters and K MoE blocks' experts; the others load while earlier blocks compute.
//            The tokens are the same as without it. --no-prefetch: each block loads only when its
//            forward asks for it (Fig. 12's baseline: every load exposed).
//   output   the generated ids (and, for a text model, the text: printable ASCII as is, other
//            bytes as \xNN), the time and tokens/s; with --ring the device bytes against the
//            whole model's, the loads and their time hidden and exposed; --json: one object.
// CHECKPOINT may also name the model.safetensors file of a checkpoint (its folder is taken).
// A folder that is not a moebench checkpoint, a prompt id outside the vocabulary, an empty
// prompt or a prompt file that is not a regular file of at most 1 MiB (infer_prompt.h) is a
// usage error (exit 2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "infer_prompt.h"
#include "moebench/config/usage_error.h"
#include "moebench/train/inference.h"
#include "moebench/storage/ring_memory.h"
#include "moebench/train/safetensors.h"

namespace moebench::cli {
namespace {

struct InferOptions {
  std::string checkpoint, prompt_file, prompt;
  int tokens = 32;
  int ring = 0;  // 0: every expert resident
  bool no_prefetch = false;
  bool json = false;
};

int infer(const InferOptions& o) {
  const std::string file_bytes = o.prompt_file.empty() ? std::string() : read_prompt_file(o.prompt_file);
  InferenceModel m;
  try {
    m = load_inference_model(o.checkpoint);
  } catch (const CheckpointError& e) {
    throw UsageError(e.what());
  }
  const bool text_model = m.config.data.source == DataSource::text;
  const std::vector<int> prompt = prompt_tokens(o.prompt, o.prompt_file, file_bytes, text_model);
  std::unique_ptr<RingMemory> ring;
  if (o.ring > 0) {
    try {
      ring = std::make_unique<RingMemory>(*m.model, o.ring, !o.no_prefetch);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--ring: ") + e.what());
    }
  }
  std::vector<int> out;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    out = greedy_generate(m, prompt, o.tokens);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RingStats rs;
  if (ring) rs = ring->stats();
  if (o.json) {
    nlohmann::json j{{"checkpoint", m.checkpoint}, {"step", m.step},   {"prompt", prompt},
                     {"tokens", out},              {"seconds", seconds}, {"tokens_per_s", out.size() / seconds}};
    if (text_model) j["text"] = printable(out);
    if (ring)
      j["ring"] = {{"slots", o.ring},
                   {"prefetch", !o.no_prefetch},
                   {"moe_blocks", ring->blocks()},
                   {"loads", rs.loads},
                   {"load_s", rs.load_seconds},
                   {"exposed_s", rs.exposed_seconds},
                   {"device_bytes", rs.device_bytes},
                   {"ring_bytes", rs.ring_bytes},
                   {"resident_bytes", rs.resident_bytes}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("# %s (step %ld): %zu prompt tokens, %zu generated (greedy) in %.3f s, %.1f tokens/s\n",
              m.checkpoint.c_str(), m.step, prompt.size(), out.size(), seconds, out.size() / seconds);
  for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? " " : "", out[i]);
  std::printf("\n");
  if (text_model) std::printf("%s%s\n", printable(prompt).c_str(), printable(out).c_str());
  if (ring)
    std::printf("# ring memory: %d of %d MoE blocks' experts on the device tier: %zu bytes (ring %zu) instead of %zu; "
                "%ld loads, %.3f ms loading, %.3f ms exposed (%.0f %% hidden behind computation)\n",
                o.ring, ring->blocks(), rs.device_bytes, rs.ring_bytes, rs.resident_bytes, rs.loads, rs.load_seconds * 1e3,
                rs.exposed_seconds * 1e3,
                rs.load_seconds > 0 ? 100 * std::max(0.0, 1 - rs.exposed_seconds / rs.load_seconds) : 100.0);
  return 0;
}

}  // namespace

void add_infer_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("infer", "Generate tokens (greedy) from a training checkpoint");
  auto o = std::make_shared<InferOptions>();
  cmd->add_option("checkpoint", o->checkpoint, "Checkpoint folder, or a run folder (its latest checkpoint)")
      ->required();
  auto* file = cmd->add_option("--prompt-file", o->prompt_file,
                               "Prompt: bytes of a text file (text models) or whitespace-separated token ids");
  cmd->add_option("--prompt", o->prompt, "Prompt token ids, e.g. \"3 14 15\" (default: the token 0)")->excludes(file);
  cmd->add_option("--tokens", o->tokens, "Tokens to generate")->transform(positive());
  cmd->add_option("--ring", o->ring, "Keep K MoE blocks' experts on the device tier, loading the others ahead (MoESys)")
      ->transform(positive());
  cmd->add_flag("--no-prefetch", o->no_prefetch,
                "With --ring: load a block only when its forward asks for it (MoESys Fig. 12's baseline)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([&action, o] { action = [o] { return infer(*o); }; });
}

}  // namespace moebench::cli
