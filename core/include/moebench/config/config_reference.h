#pragma once
// The configuration reference as Markdown, generated from the schema the loader reads: every
// section with what it holds, every key with its type, default and meaning, in schema order.
// `moebench validate --doc` prints it; docs/configuration.md is exactly this text
// (tst_config_doc fails when it differs).
#include <string>

namespace moebench {

std::string config_reference_markdown();

}  // namespace moebench
