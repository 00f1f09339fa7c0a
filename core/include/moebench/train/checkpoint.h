#pragma once
// Training checkpoints: a directory holding
//   model.safetensors      the parameters under their arena names ("blocks.3.moe.experts.5.w1")
//   optimizer.safetensors  AdamW moments as "m.<name>" and "v.<name>"
// Both carry __metadata__ {"format": "moebench-checkpoint-1", "step": "<steps done>",
// "config": "<canonical JSON>"}. Any safetensors reader can load the weights.
#include <functional>
#include <string>
#include <vector>

#include "moebench/model/param_arena.h"
#include "moebench/train/safetensors.h"
#include "moebench/optim/adamw.h"

namespace moebench {

struct CheckpointState {
  long step = 0;          // optimizer steps completed
  std::string config_json;
};

// Writes <dir>/model.safetensors and <dir>/optimizer.safetensors. The folder appears under its
// name only once both files are complete (written to a hidden sibling, then renamed), so a
// killed run never leaves a half-written checkpoint that --resume would read.
// weights: whole tensors under their names; moments: "m.<name>" and "v.<name>" of each.
void write_checkpoint(const std::string& dir, const CheckpointState& state, const std::vector<TensorRef>& weights,
                      const std::vector<TensorRef>& moments);
// The whole model of one rank that holds all of it (every view whole).
void save_checkpoint(const std::string& dir, const ParamArena& params, const AdamW& opt, const CheckpointState& state);

// Loads a checkpoint into params/opt; every tensor of the arena must be present with its whole
// shape (CheckpointError naming the tensor otherwise), and a tensor-parallel slice takes its
// runs of it (ParamView::slice), so any layout resumes from any other. Tensors the arena does
// not hold are skipped when held_elsewhere(name) says another rank holds them (another EP
// rank's experts, another pipeline stage's blocks; default: any expert); any other unknown
// tensor is an error. Returns the stored state.
CheckpointState load_checkpoint(const std::string& dir, ParamArena& params, AdamW& opt,
                                const std::function<bool(const std::string&)>& held_elsewhere = {});

// The weights alone (inference: no optimizer state is read or needed): model.safetensors of
// `dir` into params, with load_checkpoint's checks (every view present with its shape; a
// tensor the arena does not hold is an error: the arena is the whole model). Returns the
// stored state (its step and config).
CheckpointState load_weights(const std::string& dir, ParamArena& params);

// Resolves --resume PATH: a checkpoint directory, its model.safetensors or optimizer.safetensors
// (the folder is taken), or a run directory whose checkpoints/ holds step_NNNNNN folders (the
// highest step is taken). Throws CheckpointError when none is found, naming what it expected.
std::string resolve_checkpoint_dir(const std::string& path);

// The steps done by the checkpoint in `dir` (a resolved checkpoint folder), read from its
// model file's metadata. Throws CheckpointError.
long checkpoint_step(const std::string& dir);
// The canonical config JSON the checkpoint in `dir` stores (metadata "config"). Throws
// CheckpointError, also when it has none.
std::string checkpoint_config(const std::string& dir);

}  // namespace moebench
