// MoNTA's memory model (memory_model.h): Tables 3 and 4 per pipeline stage, and the layout
// both memory predictions read (memory_layout.h).
#include "moebench/perf/memory_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "memory_layout.h"
#include "moebench/config/config_layout.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/model/param_count.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {
namespace memory_detail {

PipeStage Layout::stage(int s) const {
  const BlockRange blocks = par.stage_blocks(s);
  return PipeStage{s, par.pp(), blocks.first, blocks.end, pipeline_slots(schedule, par.pp(), s, microbatches)};
}

TpShard Layout::tp() const { return TpShard{0, par.tp(), vocab_parallel}; }

ExpertShard Layout::experts() const { return ExpertShard{0, par.ep()}; }

EmbedShard Layout::embed() const { return embedding_partition ? EmbedShard{0, par.dp()} : EmbedShard{}; }

Layout layout_of(const Config& cfg) {
  Layout L;
  const ParallelConfig& par = cfg.parallel;
  L.par = moebench::layout_of(cfg);
  L.vocab_parallel = par.vocab_parallel;
  L.embedding_partition = cfg.model.embedding_partition;
  L.microbatches = std::max(1, par.microbatches);
  L.b = cfg.train.batch_size / (L.par.dp() * L.microbatches);
  L.schedule = par.schedule;
  return L;
}

}  // namespace memory_detail

const char* zero_stage_name(ZeroStage z) {
  switch (z) {
    case ZeroStage::baseline: return "baseline";
    case ZeroStage::zero1: return "ZeRO-1";
    case ZeroStage::zero2: return "ZeRO-2";
    case ZeroStage::zero3: return "ZeRO-3";
  }
  return "?";
}

double zero_bytes_per_param(ZeroStage z, int group) {
  const double n = std::max(group, 1);
  switch (z) {
    case ZeroStage::baseline: return 16.0;
    case ZeroStage::zero1: return 4.0 + 12.0 / n;  // fp16 weight and gradient whole; fp32 states sharded
    case ZeroStage::zero2: return 2.0 + 14.0 / n;  // the fp16 gradient sharded too
    case ZeroStage::zero3: return 16.0 / n;        // everything sharded
  }
  return 16.0;
}

const char* activation_scheme_name(ActivationScheme a) {
  switch (a) {
    case ActivationScheme::pp_tp_ep: return "PP+TP+EP";
    case ActivationScheme::pp_tp_ep_sp: return "PP+TP+EP+SP";
    case ActivationScheme::selective_recompute: return "PP+TP+EP+SP+selective recompute";
    case ActivationScheme::full_recompute: return "PP+TP+EP+SP+full recompute";
  }
  return "?";
}

double layer_activation_bytes(ActivationScheme scheme, const LayerShape& d, double c) {
  const double bsh = d.b * d.s * d.h, t = std::max(d.t, 1.0), scores = 5 * d.a * d.s / (d.h * t);
  switch (scheme) {
    case ActivationScheme::pp_tp_ep: return bsh * (5 + 5 * c + (8 + 16 * c) / t + scores);
    case ActivationScheme::pp_tp_ep_sp: return bsh * ((13 + 21 * c) / t + scores);
    case ActivationScheme::selective_recompute: return bsh * (13 + 21 * c) / t;
    case ActivationScheme::full_recompute: return 2 * bsh / t;
  }
  return 0;
}

double eq2_layer_bytes(const LayerShape& d, double c) {
  return d.b * d.s * d.h * (13 + 21 * c + 5 * d.a * d.s / d.h);
}

const StageMemory& MemoryModel::worst(ZeroStage z, ActivationScheme a) const {
  if (stages.empty()) throw std::logic_error("MemoryModel: no stages");
  return *std::max_element(stages.begin(), stages.end(), [&](const StageMemory& x, const StageMemory& y) {
    return x.total(z, a) < y.total(z, a);
  });
}

const StageMemory& MemoryModel::worst_fp32() const {
  if (stages.empty()) throw std::logic_error("MemoryModel: no stages");
  return *std::max_element(stages.begin(), stages.end(), [](const StageMemory& x, const StageMemory& y) {
    return x.fp32.peak() < y.fp32.peak();
  });
}

MemoryModel memory_model(const Config& cfg) {
  const memory_detail::Layout L = memory_detail::layout_of(cfg);
  MemoryModel m;
  m.b = L.b;
  m.s = cfg.model.seq_len;
  m.h = cfg.model.hidden;
  m.a = cfg.model.heads;
  m.l = cfg.model.layers;
  m.k = cfg.moe.top_k;
  m.d = L.par.dp();
  m.p = L.par.pp();
  m.t = L.par.tp();
  m.e = L.par.ep();
  m.expert_replicas = L.par.replicas();
  m.microbatches = L.microbatches;
  m.schedule = cfg.parallel.schedule;
  m.moe_blocks = cfg.moe.moe_layers;
  m.device_memory = cluster_spec(cfg.cluster, cfg.run.ranks).device_memory;
  LayerShape shape{(double)L.b, (double)m.s, (double)m.h, (double)m.a, (double)L.par.tp()};
  auto copies = [&](int block) { return cfg.is_moe_block(block) ? (double)m.k : 1.0; };
  for (int l = 0; l < m.l; ++l) m.eq2_bytes += eq2_layer_bytes(shape, copies(l));
  for (int s = 0; s < L.par.pp(); ++s) {
    const PipeStage pipe = L.stage(s);
    StageMemory st;
    st.stage = s;
    st.first_block = pipe.first_block;
    st.end_block = pipe.end_block;
    st.in_flight = pipe.in_flight;
    const ParamCounts held = rank_param_counts(cfg.model, cfg.moe, L.experts(), L.tp(), pipe, L.embed());
    st.p1 = held.dense;
    st.p2 = held.experts;
    for (int z = 0; z < kZeroStages; ++z) {
      st.psi1[z] = zero_bytes_per_param((ZeroStage)z, L.par.dp()) * st.p1;
      st.psi2[z] = zero_bytes_per_param((ZeroStage)z, L.par.replicas()) * st.p2;
    }
    for (int a = 0; a < kActivationSchemes; ++a) {
      double per_micro = 0;
      for (int l = pipe.first_block; l < pipe.end_block; ++l)
        per_micro += layer_activation_bytes((ActivationScheme)a, shape, copies(l));
      st.activations[a] = per_micro * pipe.in_flight;
    }
    st.fp32 = trainer_memory(cfg, s, s == 0);
    m.stages.push_back(st);
  }
  return m;
}

}  // namespace moebench
