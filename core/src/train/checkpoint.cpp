#include "moebench/train/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <map>
#include <stdexcept>
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
  if (it->second.shape != view.full_shape()) {
    auto fmt = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
      return out + "]";
    };
    throw CheckpointError(path + ": tensor '" + name + "' has shape " + fmt(it->second.shape) +
                          ", the model expects " + fmt(view.full_shape()));
  }
  if (view.slice.whole()) {
    std::copy(it->second.data.begin(), it->second.data.end(), dst);
    return;
  }
  for (const auto& [offset, count] : view.slice.runs)
    dst = std::copy_n(it->second.data.begin() + (long)offset, count, dst);
}

long metadata_step(SafetensorsFile& file, const std::string& path) {
  try {
    const long step = std::stol(file.metadata["step"]);
    if (step >= 0) return step;
  } catch (const std::exception&) {
  }
  throw CheckpointError(path + ": metadata 'step' is not a step count");
}

// Where a view's weights are read into: the arena itself on the CPU, `staging` for a device
// arena (then upload_view copies them there).
float* view_buffer(ParamArena& params, size_t i, std::vector<float>& staging) {
  if (!params.backend().device_memory()) return params.param(i);
  staging.resize(params.views()[i].numel);
  return staging.data();
}
void upload_view(ParamArena& params, size_t i, const std::vector<float>& staging) {
  if (params.backend().device_memory())
    params.backend().to_device(params.param(i), staging.data(), params.views()[i].numel * sizeof(float));
}

SafetensorsFile read_checked(const std::string& path) {
  SafetensorsFile file = read_safetensors(path);
  auto fmt = file.metadata.find("format");
  if (fmt == file.metadata.end() || fmt->second != kFormat)
    throw CheckpointError(path + ": not a moebench checkpoint (metadata format != " + kFormat + ")");
  return file;
}
}  // namespace

// A device arena's tensors (and AdamW's moments, on the same backend) are copied to the host
// when the writer reaches them, one view at a time, as the SSD tier's moments are.
void save_checkpoint(const std::string& dir, const ParamArena& params, const AdamW& opt, const CheckpointState& state) {
  const bool device = params.backend().device_memory();
  std::vector<TensorRef> weights, moments;
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    if (!v.slice.whole()) throw std::logic_error("save_checkpoint: " + v.name + " is a tensor-parallel slice");
    TensorRef w{v.name, v.shape, device ? nullptr : params.param(i)};
    if (device)
      w.fill = [&params, i, n = v.numel](float* out) { params.backend().to_host(out, params.param(i), n * sizeof(float)); };
    weights.push_back(std::move(w));
    TensorRef m{"m." + v.name, v.shape, device ? nullptr : opt.m_of(i)},
        vv{"v." + v.name, v.shape, device ? nullptr : opt.v_of(i)};
    if (!m.data) {  // moments on the device or held elsewhere (the SSD tier): read when written
      m.fill = [&opt, i, n = v.numel](float* out) {
        std::vector<float> other(n);
        opt.read_moments(i, out, other.data());
      };
      vv.fill = [&opt, i, n = v.numel](float* out) {
        std::vector<float> other(n);
        opt.read_moments(i, other.data(), out);
      };
    }
    moments.push_back(std::move(m));
    moments.push_back(std::move(vv));
  }
  write_checkpoint(dir, state, weights, moments);
}

void write_checkpoint(const std::string& dir, const CheckpointState& state, const std::vector<TensorRef>& weights,
                      const std::vector<TensorRef>& moments) {
  const std::map<std::string, std::string> meta{
      {"format", kFormat}, {"step", std::to_string(state.step)}, {"config", state.config_json}};
  // Both files go to a hidden sibling folder that takes the checkpoint's name only when it is
  // complete: a process killed while writing leaves ".<name>.partial-<pid>", which
  // resolve_checkpoint_dir never picks (fsync is left out: a killed process loses nothing
  // the kernel already has; a power loss may).
  const fs::path final_dir = fs::path(dir).lexically_normal();
  fs::path parent = final_dir.parent_path();
  if (parent.empty()) parent = ".";
  const std::string name = final_dir.filename().string();
  const std::string pid = std::to_string((long)::getpid());
  const fs::path partial = parent / ("." + name + ".partial-" + pid);
  std::error_code ec;
  fs::create_directories(parent);
  fs::remove_all(partial, ec);
  fs::create_directory(partial);
  try {
    write_safetensors((partial / "model.safetensors").string(), weights, meta);
    write_safetensors((partial / "optimizer.safetensors").string(), moments, meta);
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
  // Replacing a checkpoint of the same step (a resumed run saving it again): the old one
  // moves aside first, so the name always holds a complete checkpoint or none.
  const fs::path old = parent / ("." + name + ".old-" + pid);
  const bool had_old = fs::exists(final_dir);
  if (had_old) fs::rename(final_dir, old);
  fs::rename(partial, final_dir, ec);
  if (ec) {
    if (had_old) fs::rename(old, final_dir);
    fs::remove_all(partial);
    throw CheckpointError(final_dir.string() + ": cannot move the written checkpoint into place (" + ec.message() +
                          ")");
  }
  if (had_old) fs::remove_all(old, ec);
}

CheckpointState load_checkpoint(const std::string& dir, ParamArena& params, AdamW& opt,
                                const std::function<bool(const std::string&)>& held_elsewhere) {
  const std::string model_path = dir + "/model.safetensors";
  const std::string opt_path = dir + "/optimizer.safetensors";
  SafetensorsFile model = read_checked(model_path);
  SafetensorsFile moments = read_checked(opt_path);
  if (model.metadata["step"] != moments.metadata["step"])
    throw CheckpointError(dir + ": model and optimizer files come from different steps (" +
                          model.metadata["step"] + " vs " + moments.metadata["step"] + ")");
  std::vector<float> mv, w;  // one view's m and v; its weights on the host (a device arena)
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    copy_into(model, model_path, v.name, v, view_buffer(params, i, w));
    upload_view(params, i, w);
    mv.resize(2 * v.numel);
    copy_into(moments, opt_path, "m." + v.name, v, mv.data());
    copy_into(moments, opt_path, "v." + v.name, v, mv.data() + v.numel);
    opt.load_moments(i, params.param(i), mv.data(), mv.data() + v.numel);
  }
  for (const auto& [name, tensor] : model.tensors)
    if (!params.find(name) &&
        !(held_elsewhere ? held_elsewhere(name) : name.find(".moe.experts.") != std::string::npos))
      throw CheckpointError(model_path + ": tensor '" + name + "' is not part of this model");
  CheckpointState state;
  state.step = metadata_step(model, model_path);
  state.config_json = model.metadata["config"];
  return state;
}

CheckpointState load_weights(const std::string& dir, ParamArena& params) {
  const std::string model_path = dir + "/model.safetensors";
  SafetensorsFile model = read_checked(model_path);
  std::vector<float> w;
  for (size_t i = 0; i < params.views().size(); ++i) {
    copy_into(model, model_path, params.views()[i].name, params.views()[i], view_buffer(params, i, w));
    upload_view(params, i, w);
  }
  for (const auto& [name, tensor] : model.tensors)
    if (!params.find(name)) throw CheckpointError(model_path + ": tensor '" + name + "' is not part of this model");
  CheckpointState state;
  state.step = metadata_step(model, model_path);
  state.config_json = model.metadata["config"];
  return state;
}

namespace {
// "step_000300" (what save() names them); anything else in checkpoints/ is not a checkpoint.
bool is_step_folder(const std::string& name) {
  return name.size() > 5 && name.rfind("step_", 0) == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

// Numeric order of two step folder names of any length ("step_1000000" > "step_999999").
bool later_step(const std::string& a, const std::string& b) {
  auto digits = [](const std::string& n) {
    const size_t first = n.find_first_not_of('0', 5);
    return first == std::string::npos ? std::string() : n.substr(first);
  };
  const std::string da = digits(a), db = digits(b);
  return da.size() != db.size() ? da.size() > db.size() : da > db;
}
}  // namespace

std::string resolve_checkpoint_dir(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    // A checkpoint's model.safetensors or optimizer.safetensors: its folder is the checkpoint.
    const fs::path file(path);
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    const std::string name = file.filename().string();
    if ((name == "model.safetensors" || name == "optimizer.safetensors") && fs::exists(dir / "model.safetensors", ec))
      return dir.string();
    throw CheckpointError(path + ": a file, not a checkpoint (expected a checkpoint folder holding model.safetensors, "
                          "e.g. runs/NAME/checkpoints/step_NNNNNN, its model.safetensors, or a run folder)");
  }
  if (fs::exists(fs::path(path) / "model.safetensors", ec)) return path;
  if (!fs::exists(path, ec)) throw CheckpointError(path + ": no checkpoint here (no such file or folder)");
  const fs::path ckpts = fs::path(path) / "checkpoints";
  std::string best;
  if (fs::is_directory(ckpts, ec))
    for (const auto& entry : fs::directory_iterator(ckpts, ec)) {
      const std::string name = entry.path().filename().string();
      if (is_step_folder(name) && fs::exists(entry.path() / "model.safetensors") &&
          (best.empty() || later_step(name, best)))
        best = name;
    }
  if (best.empty())
    throw CheckpointError(path + ": no checkpoint here (expected model.safetensors, or "
                          "checkpoints/step_NNNNNN/ folders)");
  return (ckpts / best).string();
}

long checkpoint_step(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  SafetensorsFile file = read_checked(path);
  return metadata_step(file, path);
}

std::string checkpoint_config(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  SafetensorsFile file = read_checked(path);
  const auto it = file.metadata.find("config");
  if (it == file.metadata.end() || it->second.empty()) throw CheckpointError(path + ": metadata has no 'config'");
  return it->second;
}

}  // namespace moebench
