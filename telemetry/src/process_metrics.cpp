// SPDX-License-Identifier: MIT
// The standard process collectors (Prometheus' process_* names), read from /proc.

#include <stategraph/telemetry/metrics.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sg {
namespace {

/// The fields of /proc/self/stat after the command (which may hold spaces): field 3 first.
std::vector<std::string> proc_stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double clock_ticks() {
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(ticks) : 100.0;
}

/// utime + stime (fields 14 and 15) in seconds.
double cpu_seconds() {
  const std::vector<std::string> f = proc_stat_fields();
  if (f.size() < 13) return 0;
  return (std::stod(f[11]) + std::stod(f[12])) / clock_ticks();  // throws: render skips it
}

/// The process's start (field 22, ticks after boot) plus the boot time (btime of /proc/stat).
double start_time_seconds() {
  const std::vector<std::string> f = proc_stat_fields();
  if (f.size() < 20) return 0;
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) {
      try {
        return std::stod(line.substr(6)) + std::stod(f[19]) / clock_ticks();
      } catch (const std::exception&) {
        return 0;
      }
    }
  }
  return 0;
}

double open_fds() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n > 0 ? n - 1 : 0;  // less the descriptor listing the directory
}

double max_fds() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

}  // namespace

std::optional<ProcessMemory> read_process_memory() noexcept {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return std::nullopt;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (read != 2) return std::nullopt;
  const long page = sysconf(_SC_PAGESIZE);
  const auto page_bytes = static_cast<std::uint64_t>(page > 0 ? page : 4096);
  return ProcessMemory{resident * page_bytes, size * page_bytes};
}

void register_process_metrics(MetricsRegistry& registry) {
  if (!read_process_memory()) return;  // no /proc
  registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")
      .set_callback({}, [] {
        const auto m = read_process_memory();
        return m ? static_cast<double>(m->resident_bytes) : 0.0;
      });
  registry.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")
      .set_callback({}, [] {
        const auto m = read_process_memory();
        return m ? static_cast<double>(m->virtual_bytes) : 0.0;
      });
  registry.gauge("process_open_fds", "Number of open file descriptors.").set_callback({}, open_fds);
  registry.gauge("process_max_fds", "Maximum number of open file descriptors.")
      .set_callback({}, max_fds);
  const double started = start_time_seconds();
  registry
      .gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")
      .set_callback({}, [started] { return started; });
  registry.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")
      .set_callback({}, cpu_seconds);
}

}  // namespace sg
