// SPDX-License-Identifier: MIT
// MetricsRegistry: families of series (atomics) and the text exposition format 0.0.4.

#include <stategraph/core/error.hpp>
#include <stategraph/telemetry/metrics.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sg {

namespace detail {

enum class MetricType : std::uint8_t { counter, gauge, histogram };

/// One series. Counters and gauges use `value`; histograms `buckets` (one per bound, then +Inf;
/// not cumulative) and `sum`. `read` (guarded by the family's mutex) replaces the value when set.
struct MetricCell {
  std::atomic<double> value{0.0};
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets;
  const std::vector<double>* bounds = nullptr;
  std::atomic<double> sum{0.0};
  std::shared_ptr<const std::function<double()>> read;
  bool handed_out = false;  // a handle points here: never erased
};

struct MetricFamily {
  MetricType type = MetricType::counter;
  std::string name;
  std::string help;
  std::vector<std::string> label_names;
  std::vector<double> bounds;
  mutable std::mutex mu;
  std::map<std::vector<std::string>, std::unique_ptr<MetricCell>> series;

  void check_arity(const std::vector<std::string>& values) const {
    if (values.size() != label_names.size()) {
      throw Error(errc::kInvalidArgument,
                  "metric " + name + " takes " + std::to_string(label_names.size()) +
                      " label values, not " + std::to_string(values.size()));
    }
  }

  /// The series of `values`, created on first use. Call with `mu` held.
  MetricCell& cell(const std::vector<std::string>& values) {
    auto& slot = series[values];
    if (!slot) {
      slot = std::make_unique<MetricCell>();
      if (type == MetricType::histogram) {
        slot->bounds = &bounds;
        slot->buckets = std::make_unique<std::atomic<std::uint64_t>[]>(bounds.size() + 1);
      }
    }
    return *slot;
  }

  MetricCell* handle(const std::vector<std::string>& values) {
    check_arity(values);
    std::lock_guard lock(mu);
    MetricCell& c = cell(values);
    c.handed_out = true;
    return &c;
  }

  void set_callback(const std::vector<std::string>& values, std::function<double()> read) {
    check_arity(values);
    std::lock_guard lock(mu);
    if (!read) {
      const auto it = series.find(values);
      if (it == series.end()) return;
      if (it->second->handed_out) {
        it->second->read.reset();
      } else {
        series.erase(it);
      }
      return;
    }
    cell(values).read = std::make_shared<const std::function<double()>>(std::move(read));
  }
};

}  // namespace detail

namespace {

using detail::MetricCell;
using detail::MetricFamily;
using detail::MetricType;

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

/// A sample value: Go's float syntax, as Prometheus parses it (+Inf, -Inf, NaN).
void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

/// HELP text: backslash and newline escaped.
void append_help(std::string& out, std::string_view help) {
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

/// A label value: backslash, double quote and newline escaped.
void append_label_value(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

/// `a="x",b="y"` (no braces) for a series.
std::string label_pairs(const std::vector<std::string>& names,
                        const std::vector<std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    append_label_value(out, values[i]);
    out += '"';
  }
  return out;
}

/// `name{labels} value\n`; `extra` is one more label pair (a bucket's le) or empty.
void append_sample(std::string& out, std::string_view name, const std::string& labels,
                   std::string_view extra, double value) {
  out += name;
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out += labels;
    if (!labels.empty() && !extra.empty()) out += ',';
    out += extra;
    out += '}';
  }
  out += ' ';
  append_value(out, value);
  out += '\n';
}

struct SeriesView {
  std::string labels;
  MetricCell* cell = nullptr;
  std::shared_ptr<const std::function<double()>> read;
};

void render_family(const MetricFamily& family, std::string& out) {
  std::vector<SeriesView> views;
  {
    std::lock_guard lock(family.mu);
    views.reserve(family.series.size());
    for (const auto& [values, cell] : family.series) {
      views.push_back({label_pairs(family.label_names, values), cell.get(), cell->read});
    }
  }
  // Callbacks run outside every lock; one that throws leaves its series out.
  std::vector<std::pair<const SeriesView*, double>> read_values;
  for (const auto& v : views) {
    if (!v.read) continue;
    try {
      read_values.emplace_back(&v, (*v.read)());
    } catch (...) {  // NOLINT(bugprone-empty-catch): a failing reader drops its series only
    }
  }
  const auto value_of = [&](const SeriesView& v, double& value) {
    if (!v.read) {
      value = v.cell->value.load(std::memory_order_relaxed);
      return true;
    }
    for (const auto& [view, read] : read_values) {
      if (view == &v) {
        value = read;
        return true;
      }
    }
    return false;
  };
  if (views.empty()) return;

  out += "# HELP ";
  out += family.name;
  out += ' ';
  append_help(out, family.help);
  out += "\n# TYPE ";
  out += family.name;
  out += ' ';
  out += type_name(family.type);
  out += '\n';
  for (const auto& v : views) {
    if (family.type != MetricType::histogram) {
      double value = 0;
      if (value_of(v, value)) append_sample(out, family.name, v.labels, {}, value);
      continue;
    }
    const MetricCell& cell = *v.cell;
    const std::string bucket = family.name + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= family.bounds.size(); ++i) {
      cumulative += cell.buckets[i].load(std::memory_order_relaxed);
      std::string le = "le=\"";
      if (i < family.bounds.size()) {
        append_value(le, family.bounds[i]);
      } else {
        le += "+Inf";
      }
      le += '"';
      append_sample(out, bucket, v.labels, le, static_cast<double>(cumulative));
    }
    append_sample(out, family.name + "_sum", v.labels, {},
                  cell.sum.load(std::memory_order_relaxed));
    // The count is the +Inf bucket's, so that the two always agree in one scrape.
    append_sample(out, family.name + "_count", v.labels, {}, static_cast<double>(cumulative));
  }
}

}  // namespace

// ---- handles ----

void Counter::inc(double amount) const noexcept {
  if (cell_ == nullptr || !(amount >= 0.0)) return;
  cell_->value.fetch_add(amount, std::memory_order_relaxed);
}

double Counter::value() const noexcept {
  return cell_ == nullptr ? 0.0 : cell_->value.load(std::memory_order_relaxed);
}

void Gauge::set(double value) const noexcept {
  if (cell_ != nullptr) cell_->value.store(value, std::memory_order_relaxed);
}

void Gauge::inc(double amount) const noexcept {
  if (cell_ != nullptr) cell_->value.fetch_add(amount, std::memory_order_relaxed);
}

void Gauge::dec(double amount) const noexcept {
  if (cell_ != nullptr) cell_->value.fetch_sub(amount, std::memory_order_relaxed);
}

double Gauge::value() const noexcept {
  return cell_ == nullptr ? 0.0 : cell_->value.load(std::memory_order_relaxed);
}

void Histogram::observe(double value) const noexcept {
  if (cell_ == nullptr || std::isnan(value)) return;
  const std::vector<double>& bounds = *cell_->bounds;
  // Bucket i counts bounds[i-1] < v <= bounds[i]; the last one (+Inf) the rest.
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                          bounds.begin());
  cell_->buckets[i].fetch_add(1, std::memory_order_relaxed);
  cell_->sum.fetch_add(value, std::memory_order_relaxed);
}

std::uint64_t Histogram::count() const noexcept {
  if (cell_ == nullptr) return 0;
  std::uint64_t n = 0;
  for (std::size_t i = 0; i <= cell_->bounds->size(); ++i) {
    n += cell_->buckets[i].load(std::memory_order_relaxed);
  }
  return n;
}

double Histogram::sum() const noexcept {
  return cell_ == nullptr ? 0.0 : cell_->sum.load(std::memory_order_relaxed);
}

// ---- families ----

Counter CounterFamily::with(const std::vector<std::string>& label_values) const {
  return Counter(family_->handle(label_values));
}

void CounterFamily::set_callback(const std::vector<std::string>& label_values,
                                 std::function<double()> read) const {
  family_->set_callback(label_values, std::move(read));
}

const std::string& CounterFamily::name() const noexcept {
  return family_->name;
}

Gauge GaugeFamily::with(const std::vector<std::string>& label_values) const {
  return Gauge(family_->handle(label_values));
}

void GaugeFamily::set_callback(const std::vector<std::string>& label_values,
                               std::function<double()> read) const {
  family_->set_callback(label_values, std::move(read));
}

const std::string& GaugeFamily::name() const noexcept {
  return family_->name;
}

Histogram HistogramFamily::with(const std::vector<std::string>& label_values) const {
  return Histogram(family_->handle(label_values));
}

const std::string& HistogramFamily::name() const noexcept {
  return family_->name;
}

const std::vector<double>& HistogramFamily::buckets() const noexcept {
  return family_->bounds;
}

// ---- registry ----

struct MetricsRegistry::Impl {
  mutable std::mutex mu;
  std::vector<std::unique_ptr<MetricFamily>> families;  // registration order

  MetricFamily* add(MetricType type, const std::string& name, const std::string& help,
                    const std::vector<std::string>& label_names, std::vector<double> bounds) {
    if (!valid_metric_name(name)) {
      throw Error(errc::kInvalidArgument, "invalid metric name '" + name + "'");
    }
    for (std::size_t i = 0; i < label_names.size(); ++i) {
      if (!valid_label_name(label_names[i])) {
        throw Error(errc::kInvalidArgument,
                    "metric " + name + ": invalid label name '" + label_names[i] + "'");
      }
      if (type == MetricType::histogram && label_names[i] == "le") {
        throw Error(errc::kInvalidArgument, "histogram " + name + ": a label cannot be named le");
      }
      if (std::find(label_names.begin(), label_names.begin() + static_cast<std::ptrdiff_t>(i),
                    label_names[i]) != label_names.begin() + static_cast<std::ptrdiff_t>(i)) {
        throw Error(errc::kInvalidArgument,
                    "metric " + name + ": label '" + label_names[i] + "' appears twice");
      }
    }
    std::lock_guard lock(mu);
    for (const auto& f : families) {
      if (f->name != name) continue;
      if (f->type != type || f->label_names != label_names || f->bounds != bounds) {
        throw Error(errc::kInvalidArgument, "metric " + name + " is already registered as a " +
                                                std::string(type_name(f->type)) +
                                                " with other labels or buckets");
      }
      return f.get();
    }
    auto family = std::make_unique<MetricFamily>();
    family->type = type;
    family->name = name;
    family->help = help;
    family->label_names = label_names;
    family->bounds = std::move(bounds);
    if (label_names.empty()) family->cell({});  // a lone series is shown from the start (0)
    families.push_back(std::move(family));
    return families.back().get();
  }
};

MetricsRegistry::MetricsRegistry() : impl_(std::make_unique<Impl>()) {}

MetricsRegistry::~MetricsRegistry() = default;

CounterFamily MetricsRegistry::counter(const std::string& name, const std::string& help,
                                       const std::vector<std::string>& label_names) {
  return CounterFamily(impl_->add(MetricType::counter, name, help, label_names, {}));
}

GaugeFamily MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                   const std::vector<std::string>& label_names) {
  return GaugeFamily(impl_->add(MetricType::gauge, name, help, label_names, {}));
}

HistogramFamily MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                           const std::vector<std::string>& label_names,
                                           const std::vector<double>& buckets) {
  std::vector<double> bounds = buckets;
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  if (bounds.empty()) {
    throw Error(errc::kInvalidArgument, "histogram " + name + " has no buckets");
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) {
      throw Error(errc::kInvalidArgument,
                  "histogram " + name + ": bucket bounds must be finite and increasing");
    }
  }
  return HistogramFamily(
      impl_->add(MetricType::histogram, name, help, label_names, std::move(bounds)));
}

std::string MetricsRegistry::render() const {
  std::vector<const MetricFamily*> families;
  {
    std::lock_guard lock(impl_->mu);
    families.reserve(impl_->families.size());
    for (const auto& f : impl_->families) families.push_back(f.get());
  }
  std::string out;
  for (const MetricFamily* f : families) render_family(*f, out);
  return out;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (!(start > 0.0) || !(factor > 1.0) || count < 1 || !std::isfinite(start) ||
      !std::isfinite(factor)) {
    throw Error(errc::kInvalidArgument,
                "exponential_buckets needs start > 0, factor > 1 and count >= 1");
  }
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(count));
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) out.push_back(bound);
  return out;
}

}  // namespace sg
