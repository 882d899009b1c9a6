// Stand-in for spdlog/spdlog.h (Exhibit's corpus, not upstream code). flashinfer's logging.h
// includes spdlog, a git submodule (3rdparty/spdlog) absent from the minimal tree; this declares
// only what logging.h's set_log_level names, so that the header compiles. Nothing here runs.
#pragma once
#include <memory>
#include <string>

namespace spdlog {
namespace level {
enum level_enum { trace, debug, info, warn, err, critical, off };
}  // namespace level
namespace sinks {
struct sink {
  virtual ~sink() = default;
  void set_pattern(const std::string&) {}
  void set_level(level::level_enum) {}
};
}  // namespace sinks
class logger {
 public:
  logger(std::string name, std::shared_ptr<sinks::sink> sink) : name_(std::move(name)), sink_(std::move(sink)) {}

 private:
  std::string name_;
  std::shared_ptr<sinks::sink> sink_;
};
inline void set_default_logger(std::shared_ptr<logger>) {}
inline void set_level(level::level_enum) {}
template <typename... Args> inline void trace(Args&&...) {}
template <typename... Args> inline void debug(Args&&...) {}
template <typename... Args> inline void info(Args&&...) {}
template <typename... Args> inline void warn(Args&&...) {}
template <typename... Args> inline void error(Args&&...) {}
template <typename... Args> inline void critical(Args&&...) {}
}  // namespace spdlog
