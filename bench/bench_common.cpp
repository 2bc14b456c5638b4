// SPDX-License-Identifier: MIT
#include "bench_common.hpp"

#include <stategraph/telemetry/metrics.hpp>
#include <stategraph/telemetry/otlp.hpp>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace bench {
namespace {

constexpr std::array<const char*, 32> kVocab{
    "alpha",  "bravo",  "charlie", "delta", "echo",    "foxtrot",  "golf",    "hotel",
    "india",  "juliet", "kilo",    "lima",  "mike",    "november", "oscar",   "papa",
    "quebec", "romeo",  "sierra",  "tango", "uniform", "victor",   "whiskey", "xray",
    "yankee", "zulu",   "graph",   "node",  "edge",    "state",    "reducer", "channel"};

// A compact SHA-256 (FIPS 180-4) for the workload digests.
class Sha256 {
 public:
  void update(const unsigned char* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      buffer_[used_++] = data[i];
      if (used_ == 64) {
        block(buffer_.data());
        used_ = 0;
      }
    }
    length_ += n;
  }
  std::string hex() {
    const std::uint64_t bits = length_ * 8;
    const unsigned char pad = 0x80;
    update(&pad, 1);
    const unsigned char zero = 0;
    while (used_ != 56) update(&zero, 1);
    for (int i = 7; i >= 0; --i) {
      const auto byte = static_cast<unsigned char>(bits >> (i * 8));
      update(&byte, 1);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::uint32_t word : h_) {
      for (int i = 7; i >= 0; --i) out += kHex[(word >> (i * 4)) & 0xF];
    }
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const unsigned char* p) {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (std::uint32_t(p[i * 4]) << 24) | (std::uint32_t(p[i * 4 + 1]) << 16) |
             (std::uint32_t(p[i * 4 + 2]) << 8) | std::uint32_t(p[i * 4 + 3]);
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6],
                  h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 =
          (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  std::array<std::uint32_t, 8> h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> buffer_{};
  std::size_t used_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace

std::string text_for(std::uint32_t seed, std::size_t n) {
  XorShift32 rng(seed);
  std::string s;
  while (s.size() < n) {
    const char* w = kVocab[rng.next() % kVocab.size()];
    if (!s.empty()) s += ' ';
    s += w;
  }
  s.resize(n);
  return s;
}

std::string sha256_hex(const std::string& data) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return h.hex();
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return round_to(static_cast<double>(u.ru_maxrss) / 1024.0, 1);
}

double load1() {
  double l[1] = {0};
  if (getloadavg(l, 1) != 1) return 0;
  return round_to(l[0], 2);
}

Json rate(double ops, double wall_s) {
  Json out;
  out["ops"] = static_cast<std::int64_t>(ops);
  out["wall_s"] = round_to(wall_s, 3);
  out["per_op_us"] = round_to(wall_s * 1e6 / ops, 3);
  out["ops_per_s"] = round_to(ops / wall_s, 1);
  return out;
}

std::string messages_digest(const std::vector<sg::Message>& messages) {
  std::string joined;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i) joined += '\n';
    joined += messages[i].id;
    joined += '\t';
    joined += sg::to_string(messages[i].type);
    joined += '\t';
    joined += messages[i].text();
  }
  return sha256_hex(joined);
}

std::map<std::string, Unit>& units() {
  static std::map<std::string, Unit> all;
  return all;
}

std::map<std::string, std::vector<std::string>>& scenarios() {
  static std::map<std::string, std::vector<std::string>> all;
  return all;
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("stategraph-bench-" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace bench

namespace bench {

std::string trace_mode() {
  const char* mode = std::getenv("SG_BENCH_TRACE");
  return mode == nullptr || *mode == '\0' ? std::string("none") : std::string(mode);
}

const sg::CallbackList& trace_callbacks() {
  static const sg::CallbackList callbacks = []() -> sg::CallbackList {
    const std::string mode = trace_mode();
    if (mode == "none") return {};
    if (mode == "noop") return {std::make_shared<sg::Callbacks>()};
    if (mode == "metrics") {
      static sg::MetricsRegistry registry;
      return {std::make_shared<sg::RunMetrics>(registry)};
    }
    if (mode == "otlp") {
      auto options = sg::otlp_options_from_environment();
      if (!options)
        throw std::runtime_error("SG_BENCH_TRACE=otlp needs OTEL_EXPORTER_OTLP_ENDPOINT");
      options->sampler = sg::OtlpSampler::always_on;
      return {std::make_shared<sg::OtlpTracer>(*options)};
    }
    throw std::runtime_error("SG_BENCH_TRACE: '" + mode + "' is not none, noop, metrics or otlp");
  }();
  return callbacks;
}

}  // namespace bench
