// SPDX-License-Identifier: MIT
#include <stategraph/postgres/pg.hpp>

#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>

#include <charconv>
#include <map>

namespace sg::pg {

namespace {

PGconn* as_conn(void* p) {
  return static_cast<PGconn*>(p);
}
PGresult* as_result(void* p) {
  return static_cast<PGresult*>(p);
}

std::string trimmed(const char* message) {
  std::string out = message == nullptr ? std::string() : std::string(message);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

// ---- Params -------------------------------------------------------------------------------------

Params& Params::text(std::string value) {
  values_.push_back(std::move(value));
  nulls_.push_back(false);
  formats_.push_back(0);
  return *this;
}

Params& Params::binary(std::string value) {
  values_.push_back(std::move(value));
  nulls_.push_back(false);
  formats_.push_back(1);
  return *this;
}

Params& Params::integer(std::int64_t value) {
  return text(std::to_string(value));
}

Params& Params::null() {
  values_.emplace_back();
  nulls_.push_back(true);
  formats_.push_back(0);
  return *this;
}

// ---- Result -------------------------------------------------------------------------------------

Result::~Result() {
  if (native_ != nullptr) PQclear(as_result(native_));
}

Result::Result(Result&& other) noexcept : native_(other.native_) {
  other.native_ = nullptr;
}

Result& Result::operator=(Result&& other) noexcept {
  if (this != &other) {
    if (native_ != nullptr) PQclear(as_result(native_));
    native_ = other.native_;
    other.native_ = nullptr;
  }
  return *this;
}

int Result::rows() const noexcept {
  return native_ == nullptr ? 0 : PQntuples(as_result(native_));
}

int Result::columns() const noexcept {
  return native_ == nullptr ? 0 : PQnfields(as_result(native_));
}

bool Result::is_null(int row, int column) const noexcept {
  return PQgetisnull(as_result(native_), row, column) != 0;
}

std::string_view Result::get(int row, int column) const noexcept {
  const PGresult* r = as_result(native_);
  return {PQgetvalue(r, row, column), static_cast<std::size_t>(PQgetlength(r, row, column))};
}

std::int64_t Result::get_int(int row, int column) const {
  const std::string_view text = get(row, column);
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw PostgresError(errc::kPostgresQuery,
                        fmt::format("column {} is not an integer: '{}'", column, text));
  }
  return value;
}

std::int64_t Result::affected() const noexcept {
  const char* n = native_ == nullptr ? "" : PQcmdTuples(as_result(native_));
  std::int64_t value = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), value);
  return value;
}

// ---- Connection ---------------------------------------------------------------------------------

Connection::Connection(const std::string& conninfo, bool prepare) : prepare_(prepare) {
  conn_ = PQconnectdb(conninfo.c_str());
  if (conn_ == nullptr) throw PostgresError(errc::kPostgresConnect, "libpq could not allocate");
  if (PQstatus(as_conn(conn_)) != CONNECTION_OK) {
    const std::string why = trimmed(PQerrorMessage(as_conn(conn_)));
    PQfinish(as_conn(conn_));
    conn_ = nullptr;
    throw PostgresError(errc::kPostgresConnect, "cannot connect to Postgres: " + why);
  }
  // Notices (e.g. "relation already exists, skipping") are not errors: keep them off stderr.
  PQsetNoticeProcessor(
      as_conn(conn_), [](void*, const char*) {}, nullptr);
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(as_conn(conn_));
}

bool Connection::healthy() const noexcept {
  return conn_ != nullptr && PQstatus(as_conn(conn_)) == CONNECTION_OK;
}

PostgresError Connection::error_of(std::string_view what, void* result) const {
  std::string sqlstate;
  std::string message;
  if (result != nullptr) {
    const char* state = PQresultErrorField(as_result(result), PG_DIAG_SQLSTATE);
    sqlstate = state == nullptr ? "" : state;
    message = trimmed(PQresultErrorMessage(as_result(result)));
    PQclear(as_result(result));
  }
  if (message.empty()) message = trimmed(PQerrorMessage(as_conn(conn_)));
  const bool broken = PQstatus(as_conn(conn_)) != CONNECTION_OK;
  return {broken && sqlstate.empty() ? errc::kPostgresConnect : errc::kPostgresQuery,
          fmt::format("{}: {}", what, message), std::move(sqlstate)};
}

void Connection::fail(std::string_view what, void* result) const {
  throw error_of(what, result);
}

namespace {

/// The libpq arrays of `params` (they point into it).
struct NativeParams {
  NativeParams(const std::vector<std::string>& values, const std::vector<bool>& nulls,
               const std::vector<int>& value_formats)
      : formats(value_formats) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      pointers.push_back(nulls[i] ? nullptr : values[i].data());
      lengths.push_back(static_cast<int>(values[i].size()));
    }
  }
  std::vector<const char*> pointers;
  std::vector<int> lengths;
  std::vector<int> formats;
};

bool succeeded(const PGresult* r) {
  const auto status = PQresultStatus(r);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

}  // namespace

void Connection::require_open() const {
  if (conn_ == nullptr) {
    throw PostgresError(errc::kPostgresConnect,
                        "the Postgres connection was closed after an error");
  }
}

const std::string* Connection::prepared_name(const std::string& sql, const Params& params) const {
  if (!prepare_ || params.size() == 0) return nullptr;  // DDL and the like: never prepared
  const auto it = prepared_.find(sql);
  return it == prepared_.end() ? nullptr : &it->second;
}

Result Connection::exec(const std::string& sql, const Params& params, bool binary_result) {
  require_open();
  PGconn* c = as_conn(conn_);
  const NativeParams native(params.values_, params.nulls_, params.formats_);
  const auto n = static_cast<int>(params.size());
  if (prepare_ && n > 0) {
    const std::string* name = prepared_name(sql, params);
    if (name == nullptr) {
      std::string fresh = fmt::format("sg{}", prepared_.size());
      PGresult* p = PQprepare(c, fresh.c_str(), sql.c_str(), n, nullptr);
      if (p == nullptr || !succeeded(p)) fail(sql.substr(0, 80), p);
      PQclear(p);
      name = &prepared_.emplace(sql, std::move(fresh)).first->second;
    }
    PGresult* r = PQexecPrepared(c, name->c_str(), n, native.pointers.data(), native.lengths.data(),
                                 native.formats.data(), binary_result ? 1 : 0);
    if (r == nullptr || !succeeded(r)) fail(sql.substr(0, 80), r);
    return Result(r);
  }
  PGresult* r = PQexecParams(c, sql.c_str(), n, nullptr, native.pointers.data(),
                             native.lengths.data(), native.formats.data(), binary_result ? 1 : 0);
  if (r == nullptr || !succeeded(r)) fail(sql.substr(0, 80), r);
  return Result(r);
}

std::vector<Result> Connection::pipeline(const std::vector<Statement>& statements, bool atomic) {
  require_open();
  PGconn* c = as_conn(conn_);
  if (PQenterPipelineMode(c) != 1) fail("entering pipeline mode", nullptr);
  struct Exit {  // leaves pipeline mode; a connection left mid-pipeline by an error is closed
    Connection* self;
    ~Exit() {
      if (self->conn_ != nullptr && PQexitPipelineMode(as_conn(self->conn_)) != 1) {
        PQfinish(as_conn(self->conn_));
        self->conn_ = nullptr;
      }
    }
  } exit{this};
  std::size_t syncs = 0;
  // The statements this batch prepares (sql -> name), kept once their PREPARE succeeded; and
  // which results are PREPAREs (they are not the caller's).
  std::map<std::string, std::string> preparing;
  std::vector<const std::string*> prepare_results;  // in order of the results: sql, or null
  for (const auto& s : statements) {
    const NativeParams native(s.params.values_, s.params.nulls_, s.params.formats_);
    const auto n = static_cast<int>(s.params.size());
    int sent = 0;
    if (prepare_ && n > 0) {
      const std::string* name = prepared_name(s.sql, s.params);
      if (name == nullptr) {
        auto [it, fresh] =
            preparing.try_emplace(s.sql, fmt::format("sg{}", prepared_.size() + preparing.size()));
        if (fresh) {
          if (PQsendPrepare(c, it->second.c_str(), s.sql.c_str(), n, nullptr) != 1) {
            fail(s.sql.substr(0, 80), nullptr);
          }
          prepare_results.push_back(&it->first);
        }
        name = &it->second;
      }
      sent = PQsendQueryPrepared(c, name->c_str(), n, native.pointers.data(), native.lengths.data(),
                                 native.formats.data(), s.binary_result ? 1 : 0);
    } else {
      sent =
          PQsendQueryParams(c, s.sql.c_str(), n, nullptr, native.pointers.data(),
                            native.lengths.data(), native.formats.data(), s.binary_result ? 1 : 0);
    }
    prepare_results.push_back(nullptr);
    if (sent != 1) fail(s.sql.substr(0, 80), nullptr);
    if (!atomic) {
      if (PQpipelineSync(c) != 1) fail("pipeline sync", nullptr);
      ++syncs;
    }
  }
  if (atomic) {
    if (PQpipelineSync(c) != 1) fail("pipeline sync", nullptr);
    ++syncs;
  }
  std::vector<Result> results;
  std::optional<PostgresError> first_error;
  std::size_t synced = 0;
  std::size_t index = 0;
  std::size_t sent_index = 0;  // into prepare_results
  while (synced < syncs) {
    PGresult* r = PQgetResult(c);
    if (r == nullptr) {
      if (PQstatus(c) != CONNECTION_OK) fail("pipeline", nullptr);
      continue;  // the end of one statement's results
    }
    const auto status = PQresultStatus(r);
    if (status == PGRES_PIPELINE_SYNC) {
      ++synced;
      PQclear(r);
      continue;
    }
    if (sent_index < prepare_results.size() && prepare_results[sent_index++] != nullptr) {
      const std::string& sql = *prepare_results[sent_index - 1];
      if (succeeded(r)) {
        prepared_.emplace(sql, preparing.at(sql));
        PQclear(r);
      } else if (status == PGRES_PIPELINE_ABORTED) {
        PQclear(r);
      } else if (!first_error) {
        first_error = error_of(sql.substr(0, 80), r);
      } else {
        PQclear(r);
      }
      continue;
    }
    if (status == PGRES_PIPELINE_ABORTED) {
      PQclear(r);
      results.emplace_back();
      ++index;
      continue;
    }
    if (!succeeded(r)) {
      if (!first_error) {
        first_error = error_of(
            index < statements.size() ? statements[index].sql.substr(0, 80) : "pipeline", r);
      } else {
        PQclear(r);
      }
      results.emplace_back();
      ++index;
      continue;
    }
    results.push_back(Result(r));
    ++index;
  }
  if (first_error) throw *first_error;
  return results;
}

void Connection::listen(const std::string& channel) {
  (void)exec("LISTEN " + quote_identifier(channel));
}

std::vector<Notification> Connection::wait_for_notifications(std::chrono::milliseconds timeout) {
  require_open();
  PGconn* c = as_conn(conn_);
  std::vector<Notification> out;
  const auto take = [&] {
    while (PGnotify* n = PQnotifies(c)) {
      out.push_back({n->relname, n->extra == nullptr ? "" : n->extra});
      PQfreemem(n);
    }
  };
  if (PQconsumeInput(c) != 1) fail("reading notifications", nullptr);
  take();
  if (!out.empty()) return out;
  pollfd fd{PQsocket(c), POLLIN, 0};
  if (fd.fd < 0) fail("reading notifications", nullptr);
  if (::poll(&fd, 1, static_cast<int>(timeout.count())) > 0) {
    if (PQconsumeInput(c) != 1) fail("reading notifications", nullptr);
    take();
  }
  return out;
}

// ---- Pool ---------------------------------------------------------------------------------------

Pool::Pool(std::string conninfo, std::size_t size, bool prepare)
    : conninfo_(std::move(conninfo)), size_(size), prepare_(prepare) {
  if (size_ == 0) throw PostgresError(errc::kPostgresConnect, "a Postgres pool needs connections");
}

Pool::~Pool() = default;

Pool::Lease::~Lease() {
  if (conn_) pool_->give_back(std::move(conn_));
}

Pool::Lease Pool::acquire() {
  std::unique_lock lock(mu_);
  freed_.wait(lock, [&] { return !idle_.empty() || open_ < size_; });
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    if (conn->healthy()) return Lease(*this, std::move(conn));
    --open_;  // broken while idle (a restarted server): replaced below
  }
  ++open_;
  lock.unlock();
  try {
    return Lease(*this, std::make_unique<Connection>(conninfo_, prepare_));
  } catch (...) {
    lock.lock();
    --open_;
    freed_.notify_one();
    throw;
  }
}

void Pool::drop_idle() {
  std::vector<std::unique_ptr<Connection>> dropped;
  {
    std::lock_guard lock(mu_);
    open_ -= idle_.size();
    dropped.swap(idle_);
    freed_.notify_all();
  }
}

void Pool::give_back(std::unique_ptr<Connection> conn) {
  std::lock_guard lock(mu_);
  if (conn->healthy()) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
  freed_.notify_one();
}

std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (const char ch : name) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

}  // namespace sg::pg
