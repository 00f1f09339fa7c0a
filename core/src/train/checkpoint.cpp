#include "moebench/train/checkpoint.h"

#include <filesystem>
#include <map>
#include <vector>

#include "moebench/train/safetensors.h"

namespace fs = std::filesystem;

namespace moebench {
namespace {
constexpr const char* kFormat = "moebench-checkpoint-1";

void copy_into(const SafetensorsFile& file, const std::string& path, const std::string& name,
               const ParamView& view, float* dst) {
  auto it = file.tensors.find(name);
  if (it == file.tensors.end())
    throw CheckpointError(path + ": tensor '" + name + "' is missing (the model has it)");
  if (it->second.shape != view.shape) {
    auto fmt = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
      return out + "]";
    };
    throw CheckpointError(path + ": tensor '" + name + "' has shape " + fmt(it->second.shape) +
                          ", the model expects " + fmt(view.shape));
  }
  std::copy(it->second.data.begin(), it->second.data.end(), dst);
}

SafetensorsFile read_checked(const std::string& path) {
  SafetensorsFile file = read_safetensors(path);
  auto fmt = file.metadata.find("format");
  if (fmt == file.metadata.end() || fmt->second != kFormat)
    throw CheckpointError(path + ": not a moebench checkpoint (metadata format != " + kFormat + ")");
  return file;
}
}  // namespace

void save_checkpoint(const std::string& dir, const ParamArena& params, const AdamW& opt,
                     const CheckpointState& state, const std::vector<TensorRef>& extra_weights,
                     const std::vector<TensorRef>& extra_moments) {
  fs::create_directories(dir);
  const std::map<std::string, std::string> meta{
      {"format", kFormat}, {"step", std::to_string(state.step)}, {"config", state.config_json}};
  std::vector<TensorRef> weights, moments;
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    weights.push_back({v.name, v.shape, params.param(i)});
    moments.push_back({"m." + v.name, v.shape, opt.m().data() + v.offset});
    moments.push_back({"v." + v.name, v.shape, opt.v().data() + v.offset});
  }
  weights.insert(weights.end(), extra_weights.begin(), extra_weights.end());
  moments.insert(moments.end(), extra_moments.begin(), extra_moments.end());
  write_safetensors(dir + "/model.safetensors", weights, meta);
  write_safetensors(dir + "/optimizer.safetensors", moments, meta);
}

CheckpointState load_checkpoint(const std::string& dir, ParamArena& params, AdamW& opt) {
  const std::string model_path = dir + "/model.safetensors";
  const std::string opt_path = dir + "/optimizer.safetensors";
  SafetensorsFile model = read_checked(model_path);
  SafetensorsFile moments = read_checked(opt_path);
  if (model.metadata["step"] != moments.metadata["step"])
    throw CheckpointError(dir + ": model and optimizer files come from different steps (" +
                          model.metadata["step"] + " vs " + moments.metadata["step"] + ")");
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    copy_into(model, model_path, v.name, v, params.param(i));
    copy_into(moments, opt_path, "m." + v.name, v, opt.m().data() + v.offset);
    copy_into(moments, opt_path, "v." + v.name, v, opt.v().data() + v.offset);
  }
  for (const auto& [name, tensor] : model.tensors)
    if (!params.find(name) && name.find(".moe.experts.") == std::string::npos)
      throw CheckpointError(model_path + ": tensor '" + name + "' is not part of this model");
  CheckpointState state;
  try {
    state.step = std::stol(model.metadata["step"]);
  } catch (const std::exception&) {
    throw CheckpointError(model_path + ": metadata 'step' is not a number");
  }
  state.config_json = model.metadata["config"];
  return state;
}

std::string resolve_checkpoint_dir(const std::string& path) {
  if (fs::exists(fs::path(path) / "model.safetensors")) return path;
  const fs::path ckpts = fs::path(path) / "checkpoints";
  std::string best;
  if (fs::is_directory(ckpts))
    for (const auto& entry : fs::directory_iterator(ckpts)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("step_", 0) == 0 && fs::exists(entry.path() / "model.safetensors") &&
          name > best)
        best = name;
    }
  if (best.empty())
    throw CheckpointError(path + ": no checkpoint here (expected model.safetensors, or "
                          "checkpoints/step_NNNNNN/ folders)");
  return (ckpts / best).string();
}

}  // namespace moebench
