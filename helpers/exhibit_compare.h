// Record a comparison of a result with its reference where Exhibit's report can read it.
//
// Copy this header beside your program (C++17, the standard library only):
//
//   #include "exhibit_compare.h"
//   bool ok = exhibit::compare("gemm_128", got.data(), want.data(), rows, cols, 1e-3, 1e-3);
//
// Each call checks |got - want| <= atol + rtol * |want| element by element over a rows x cols
// result in row-major order (NaN where the reference is not NaN is wrong; any element type
// convertible to double) and writes every check of the process so far as an exhibit.results/1
// document to `out` (default: $EXHIBIT_OUT, which the runner sets to the unit's {out}; with
// neither, nothing is written). A failed check records which elements were wrong: their count,
// the greatest difference and its index, the first few indices, the runs of rows and of columns
// holding a wrong element, how many wrong elements are exactly 0, NaN or infinite, and the one
// ratio to the reference they share, if any. helpers/exhibit_compare.py writes the same from
// Python. Returns whether the check passed; prints one line to stderr when it did not.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace exhibit {
namespace detail {

// Sorted distinct indices as [first, end) runs, at most 16; sets `more` when there were more.
inline std::string runs(const std::vector<size_t>& sorted, bool& more) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i : sorted) {
    if (!out.empty() && out.back().second == i) {
      out.back().second = i + 1;
    } else if (out.empty() || out.back().second < i) {
      out.push_back({i, i + 1});
    }
  }
  more = out.size() > 16;
  std::string s = "[";
  for (size_t k = 0; k < out.size() && k < 16; ++k) {
    s += (k ? "," : "") + std::string("[") + std::to_string(out[k].first) + "," +
         std::to_string(out[k].second) + "]";
  }
  return s + "]";
}

inline std::string quoted(const char* text) {
  std::string s = "\"";
  for (const char* c = text; *c; ++c) {
    if (*c == '"' || *c == '\\') s += '\\';
    if (static_cast<unsigned char>(*c) >= 0x20) s += *c;
  }
  return s + "\"";
}

inline std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::vector<std::string>& entries() {
  static std::vector<std::string> all;
  return all;
}

}  // namespace detail

template <typename T, typename U>
bool compare(const char* name, const T* got, const U* want, size_t rows, size_t cols,
             double atol = 1e-5, double rtol = 1e-5, const char* out = nullptr,
             const char* program = "program") {
  size_t total = rows * cols, wrong = 0, zeros = 0, nan = 0, inf = 0;
  double greatest = -1.0, lo = INFINITY, hi = -INFINITY, sum = 0.0;
  size_t greatest_at = 0;
  bool all_ratios = true;
  std::vector<size_t> first, wrong_rows, wrong_cols;
  std::vector<bool> row_seen(rows), col_seen(cols);
  for (size_t i = 0; i < total; ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (std::isnan(w)) continue;
    double d = std::isnan(g) ? INFINITY : std::fabs(g - w);
    if (!(d > atol + rtol * std::fabs(w))) continue;
    ++wrong;
    if (first.size() < 10) first.push_back(i);
    if (!row_seen[i / cols]) row_seen[i / cols] = true;
    if (!col_seen[i % cols]) col_seen[i % cols] = true;
    zeros += g == 0.0;
    nan += std::isnan(g);
    inf += std::isinf(g);
    if (std::isfinite(d) && d > greatest) greatest = d, greatest_at = i;
    if (w != 0.0 && std::isfinite(g)) {
      double r = g / w;
      lo = std::min(lo, r), hi = std::max(hi, r), sum += r;
    } else {
      all_ratios = false;
    }
  }
  std::string e = "{\"name\":" + detail::quoted(name) + ",\"passed\":" + (wrong ? "false" : "true");
  if (wrong) {
    for (size_t r = 0; r < rows; ++r)
      if (row_seen[r]) wrong_rows.push_back(r);
    for (size_t c = 0; c < cols; ++c)
      if (col_seen[c]) wrong_cols.push_back(c);
    bool more_rows = false, more_cols = false;
    std::string m = "{\"mismatched\":" + std::to_string(wrong) +
                    ",\"total\":" + std::to_string(total) + ",\"first\":[";
    for (size_t k = 0; k < first.size(); ++k)
      m += (k ? ",[" : "[") + std::to_string(first[k]) + "]";
    m += "],\"shape\":[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
    m += ",\"wrong_rows\":" + detail::runs(wrong_rows, more_rows);
    m += ",\"wrong_cols\":" + detail::runs(wrong_cols, more_cols);
    if (more_rows) m += ",\"more_rows\":true";
    if (more_cols) m += ",\"more_cols\":true";
    m += ",\"zeros\":" + std::to_string(zeros) + ",\"nan\":" + std::to_string(nan) +
         ",\"inf\":" + std::to_string(inf);
    if (greatest >= 0.0) {
      m += ",\"greatest_abs\":" + detail::number(greatest) + ",\"greatest_at\":[" +
           std::to_string(greatest_at / cols) + "," + std::to_string(greatest_at % cols) + "]";
      e += ",\"max_abs_err\":" + detail::number(greatest);
    }
    double mid = sum / static_cast<double>(wrong);
    if (all_ratios && hi - lo <= 1e-3 * std::max(std::fabs(mid), 1e-30) &&
        std::fabs(mid - 1.0) > 1e-6 && std::fabs(mid) > 1e-6)
      m += ",\"ratio\":" + detail::number(mid);
    e += ",\"mismatch\":" + m + "}";
    char msg[96];
    std::snprintf(msg, sizeof msg, "Mismatched elements: %zu / %zu (%.1f%%)", wrong, total,
                  100.0 * static_cast<double>(wrong) / static_cast<double>(total ? total : 1));
    e += ",\"message\":" + detail::quoted(msg);
    std::fprintf(stderr, "%s: %s\n", name, msg);
  }
  detail::entries().push_back(e + "}");
  const char* path = out ? out : std::getenv("EXHIBIT_OUT");
  if (path && *path) {
    std::string tmp = std::string(path) + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "{\"schema\":\"exhibit.results/1\",\"program\":%s,\"results\":[",
                   detail::quoted(program).c_str());
      for (size_t k = 0; k < detail::entries().size(); ++k)
        std::fprintf(f, "%s%s", k ? "," : "", detail::entries()[k].c_str());
      std::fprintf(f, "]}\n");
      std::fclose(f);
      std::rename(tmp.c_str(), path);
    }
  }
  return wrong == 0;
}

}  // namespace exhibit
