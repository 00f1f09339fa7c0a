#pragma once
// Greedy generation from a training checkpoint (`moebench infer`): the model the checkpoint's
// stored config describes, built whole on one rank (every expert, one pipeline stage, no tensor
// parallelism), its weights read from model.safetensors (train/checkpoint.h load_weights), the
// MoE blocks routing as in training (the config's moe.routing: learned, or its synthetic choice).
// Each new token is the argmax of the logits at the last position of the context, the context
// being the prompt and the tokens generated so far, cut to its last model.seq_len tokens (the
// position embedding has seq_len rows); the whole context is recomputed per token (no KV cache:
// the models here are small, and it keeps one forward path with training).
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/moe_gpt.h"

namespace moebench {

struct InferenceModel {
  std::string checkpoint;  // the resolved checkpoint folder
  long step = 0;           // optimizer steps the checkpoint had done
  Config config;           // the run's config, as the checkpoint stores it
  std::unique_ptr<MoeGpt> model;
};

// Resolves `path` as --resume does (a checkpoint folder, or a run folder whose checkpoints/ holds
// step_NNNNNN folders) and loads it. Throws CheckpointError naming the file for anything that is
// not a moebench checkpoint (another format, missing or unknown tensors, a config that cannot be
// read back).
InferenceModel load_inference_model(const std::string& path);

// `count` tokens after `prompt` (non-empty, every id in [0, vocab_size): std::invalid_argument
// naming the first bad one otherwise).
std::vector<int> greedy_generate(InferenceModel& m, const std::vector<int>& prompt, int count);

}  // namespace moebench
