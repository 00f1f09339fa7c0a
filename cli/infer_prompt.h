#pragma once
// The prompt of `moebench infer` (cmd_infer.cpp): read from --prompt-file with a bound, or given
// inline with --prompt, and the printable form of tokens and of bad words in messages.
#include <cstddef>
#include <string>
#include <vector>

namespace moebench::cli {

// A prompt file holds at most this many bytes (docs/limits.md "Sizes, memory and time"): 1 MiB
// is 128 times the longest context of the sample configs (8,192 tokens) as bytes, 64 times as ids
// ("1 "), and is read and parsed in milliseconds (the model sees only its last seq_len tokens).
inline constexpr size_t kMaxPromptBytes = size_t(1) << 20;

// The bytes of --prompt-file, read before anything else is loaded. Throws UsageError naming the
// option and the file when it is missing, not a regular file (a FIFO or a device such as
// /dev/zero is never opened) or over kMaxPromptBytes (read with that bound, so a file that grows
// meanwhile is refused too).
std::string read_prompt_file(const std::string& path);

// The token ids of the prompt: --prompt's ids, else the prompt file's bytes (text_model: each
// byte one token) or its whitespace-separated ids; {0} when neither is given. Throws UsageError
// for a word that is not a token id, quoted printable and cut (printable_excerpt).
std::vector<int> prompt_tokens(const std::string& prompt, const std::string& prompt_file, const std::string& file_bytes,
                               bool text_model);

// Printable ASCII as is, a newline as \n, any other byte as \xNN.
std::string printable(const std::vector<int>& bytes);
// `text` made printable and cut after `max` bytes: "ab\x00c... (N bytes)".
std::string printable_excerpt(const std::string& text, size_t max = 48);

}  // namespace moebench::cli
