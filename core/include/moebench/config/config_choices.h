#pragma once
// The config's enum-like keys as enums: the loader parses each TOML word once (an unknown word
// is a config error naming the words it accepts) and every consumer compares enum values.
// Choices<E>::names holds the words in the enum's order; config_to_toml writes them back.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace moebench {

enum class Device { cpu, cuda };                  // run.device
enum class Precision { fp32, bf16 };              // run.precision
enum class TrainPrecision { runtime, fp32, fp16, bf16 };  // cluster.train_precision
enum class PipeSchedule { one_f_one_b, gpipe };   // parallel.schedule
enum class DataSource { synthetic, bin, text };   // data.source
enum class SparseStorage { memory, ssd };         // storage.sparse
enum class DenseStorage { replicated, zero3 };    // storage.dense

template <class E>
struct Choices;
template <>
struct Choices<Device> { static constexpr std::array<std::string_view, 2> names{"cpu", "cuda"}; };
template <>
struct Choices<Precision> { static constexpr std::array<std::string_view, 2> names{"fp32", "bf16"}; };
template <>
struct Choices<TrainPrecision> {
  static constexpr std::array<std::string_view, 4> names{"runtime", "fp32", "fp16", "bf16"};
};
template <>
struct Choices<PipeSchedule> { static constexpr std::array<std::string_view, 2> names{"1f1b", "gpipe"}; };
template <>
struct Choices<DataSource> { static constexpr std::array<std::string_view, 3> names{"synthetic", "bin", "text"}; };
template <>
struct Choices<SparseStorage> { static constexpr std::array<std::string_view, 2> names{"memory", "ssd"}; };
template <>
struct Choices<DenseStorage> { static constexpr std::array<std::string_view, 2> names{"replicated", "zero3"}; };

// The TOML word of `v` ("1f1b").
template <class E>
std::string choice_name(E v) {
  return std::string(Choices<E>::names[(size_t)v]);
}

// The value whose word is `word`; nullopt for any other text.
template <class E>
std::optional<E> parse_choice(std::string_view word) {
  for (size_t i = 0; i < Choices<E>::names.size(); ++i)
    if (Choices<E>::names[i] == word) return E(i);
  return std::nullopt;
}

// "\"cpu\" or \"cuda\"", "\"synthetic\", \"bin\" or \"text\"" (messages).
template <class E>
std::string choices_text() {
  std::string s;
  const auto& n = Choices<E>::names;
  for (size_t i = 0; i < n.size(); ++i)
    s += (i == 0 ? "" : i + 1 == n.size() ? " or " : ", ") + ("\"" + std::string(n[i]) + "\"");
  return s;
}

}  // namespace moebench
