// Stand-in for spdlog/sinks/stdout_color_sinks.h (Exhibit's corpus, not upstream code); see
// ../spdlog.h.
#pragma once
#include "../spdlog.h"

namespace spdlog {
namespace sinks {
struct stdout_color_sink_mt : sink {};
}  // namespace sinks
}  // namespace spdlog
