#include "moebench/train/inference.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/config/config_json.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/train/checkpoint.h"

namespace moebench {

InferenceModel load_inference_model(const std::string& path) {
  InferenceModel m;
  m.checkpoint = resolve_checkpoint_dir(path);
  const std::string file = m.checkpoint + "/model.safetensors";
  // The config first (the arena's shapes come from it), then the weights into that arena.
  const std::string json = checkpoint_config(m.checkpoint);
  try {
    m.config = config_from_json(json);
  } catch (const std::exception& e) {
    throw CheckpointError(file + ": its stored config cannot be read back (" + e.what() + ")");
  }
  m.model = std::make_unique<MoeGpt>(m.config.model, m.config.moe);
  m.step = load_weights(m.checkpoint, m.model->params()).step;
  m.model->set_routing(m.config.moe.routing, m.config.run.seed);
  return m;
}

std::vector<int> greedy_generate(InferenceModel& m, const std::vector<int>& prompt, int count) {
  const int V = m.config.model.vocab_size, T_max = m.config.model.seq_len;
  if (prompt.empty()) throw std::invalid_argument("infer: the prompt is empty (at least one token is needed)");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= V)
      throw std::invalid_argument("infer: prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                                  ", outside the model's vocabulary [0, " + std::to_string(V) + ")");
  std::vector<int> context = prompt, out;
  for (int n = 0; n < count; ++n) {
    const int T = std::min((int)context.size(), T_max);
    const std::vector<int> window(context.end() - T, context.end());
    m.model->forward(window.data(), window.data(), 1, T);  // targets unused: the loss is not read
    const float* last = m.model->logits() + (size_t)(T - 1) * V;
    const int next = (int)(std::max_element(last, last + V) - last);  // ties: the lowest id
    out.push_back(next);
    context.push_back(next);
  }
  return out;
}

}  // namespace moebench
