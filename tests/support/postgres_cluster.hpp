// SPDX-License-Identifier: MIT
#pragma once

// A throwaway PostgreSQL 15 cluster for a test: a data directory in a temp dir, a server on a unix
// socket of its own (no TCP port to collide on), stopped by its pid and removed when the fixture
// goes. initdb and createdb run once per build tree into a template (a directory under /tmp whose
// path SG_TEST_BUILD_DIR/postgres-template.path holds, made under a file lock, as ctest runs test
// processes in parallel; ctest's postgres/remove_template removes it after the last test); each
// cluster copies it, which is much faster than initdb for the many test cases that each start
// one. As root, the PostgreSQL programs run as the `postgres` user (initdb refuses root), from a
// directory that user can enter: the build tree may sit where it cannot, as in a home directory
// of mode 700.

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"
#include "temp_dir.hpp"

namespace sg::test {

/// Where Debian's PostgreSQL 15 server programs are.
inline const std::string kPostgresBin = "/usr/lib/postgresql/15/bin";

/// Why no cluster can be made here (empty when one can): the reason a test skips.
inline std::string postgres_unavailable() {
  if (!std::filesystem::exists(kPostgresBin + "/initdb")) {
    return "PostgreSQL 15 is not installed (" + kPostgresBin +
           "/initdb missing; scripts/install-deps installs postgresql-15)";
  }
  if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
    return "running as root and there is no 'postgres' user to run initdb as";
  }
  return {};
}

/// At the top of a test case: ends it with a message saying why when no cluster can be made here.
#define SG_REQUIRE_POSTGRES()                                                   \
  if (const std::string why = sg::test::postgres_unavailable(); !why.empty()) { \
    MESSAGE("skipped: " << why);                                                \
    return;                                                                     \
  }

/// One cluster with a database "sgtest". Not thread-safe.
class PostgresCluster {
 public:
  PostgresCluster() {
    if (const std::string why = postgres_unavailable(); !why.empty()) {
      throw std::runtime_error(why);
    }
    const std::filesystem::path made = ensure_template();
    data_ = dir_.sub("data");
    give_to_postgres(dir_.path());
    check(run_process("/bin/cp", {"-a", (made / "data").string(), data_}), "copying the template");
    start();
  }
  ~PostgresCluster() {
    try {
      stop();
    } catch (...) {
    }
  }
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  /// The libpq connection string of database "sgtest".
  [[nodiscard]] std::string conninfo() const {
    return "host=" + dir_.path().string() + " port=" + port() + " user=postgres dbname=sgtest";
  }

  /// The same as a postgresql:// URL (for `stategraph serve --db`).
  [[nodiscard]] std::string url() const {
    return "postgresql:///sgtest?host=" + dir_.path().string() + "&port=" + port() +
           "&user=postgres";
  }

  /// Starts the server (after stop()).
  void start() { start_server(data_, dir_.path()); }

  /// Stops the server (fast: open connections are cut) and waits for the postmaster to exit.
  void stop() { stop_server(data_, dir_.path()); }

  /// The server log (for failure messages).
  [[nodiscard]] std::string log() const { return slurp(dir_.path() / "server.log"); }

 private:
  [[nodiscard]] static std::string port() { return "54329"; }  // names the socket file only

  static void start_server(const std::string& data, const std::filesystem::path& socket_dir) {
    check(run({kPostgresBin + "/pg_ctl", "-D", data, "-l", (socket_dir / "server.log").string(),
               "-w", "-t", "30", "-s", "-o",
               "-c listen_addresses='' -p 54329 -k " + socket_dir.string() +
                   " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                   " -c max_connections=200",
               "start"},
              socket_dir),
          "pg_ctl start", socket_dir);
  }

  static void stop_server(const std::string& data, const std::filesystem::path& dir) {
    std::ifstream in(data + "/postmaster.pid");
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) return;
    (void)run({kPostgresBin + "/pg_ctl", "-D", data, "-m", "fast", "-w", "-s", "stop"}, dir);
    for (int i = 0; i < 300 && running(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  /// Whether `pid` runs: a zombie does not (the postmaster's parent is whatever reaps orphans,
  /// which may take its time).
  static bool running(pid_t pid) {
    if (kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string field;
    for (int i = 0; i < 3 && stat >> field; ++i) {
    }
    return field != "Z";
  }

  /// As root, the PostgreSQL programs run as `postgres`: it must own what they write.
  static void give_to_postgres(const std::filesystem::path& dir) {
    if (geteuid() != 0) return;
    const passwd* pw = getpwnam("postgres");
    if (chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      throw std::runtime_error("chown of " + dir.string() + " failed");
    }
  }

  /// The template: an initdb'd, cleanly stopped cluster with database "sgtest", made once per
  /// build tree in a directory under /tmp (see the top of this file).
  static std::filesystem::path ensure_template() {
    namespace fs = std::filesystem;
    const fs::path path_file = fs::path(SG_TEST_BUILD_DIR) / "postgres-template.path";
    const auto named = [&] {
      std::ifstream in(path_file);
      std::string dir;
      std::getline(in, dir);
      return fs::path(dir);
    };
    const auto made_before = [&]() -> std::optional<fs::path> {
      if (const fs::path dir = named(); !dir.empty() && fs::exists(dir / "ready")) return dir;
      return std::nullopt;
    };
    if (auto made = made_before()) return *made;
    const std::string lock_path = (fs::path(SG_TEST_BUILD_DIR) / "postgres-template.lock").string();
    const int lock = open(lock_path.c_str(), O_CREAT | O_RDWR, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
      throw std::runtime_error("cannot lock " + lock_path);
    }
    struct Unlock {
      int fd;
      ~Unlock() { close(fd); }
    } unlock{lock};
    if (auto made = made_before()) return *made;  // another test process made it meanwhile
    const std::string prefix = "/tmp/sg-pg-template-";
    if (const std::string unfinished = named().string(); unfinished.starts_with(prefix)) {
      fs::remove_all(unfinished);
    }
    std::string pattern = prefix + "XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    const fs::path made = pattern;
    std::ofstream(path_file) << made.string() << "\n";
    give_to_postgres(made);
    const std::string data = (made / "data").string();
    check(run({kPostgresBin + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
               "--locale=C.UTF-8", "--no-sync", "--wal-segsize=1"},  // 1 MB WAL files: less to copy
              made),
          "initdb", made);
    start_server(data, made);
    const ProcessResult created = run({kPostgresBin + "/createdb", "-h", made.string(), "-p",
                                       "54329", "-U", "postgres", "sgtest"},
                                      made);
    stop_server(data, made);
    check(created, "createdb", made);
    std::ofstream(made / "ready") << "initdb'd by tests/support/postgres_cluster.hpp\n";
    return made;
  }

  /// Runs a PostgreSQL program in `dir`, as `postgres` when this process is root.
  static ProcessResult run(const std::vector<std::string>& command,
                           const std::filesystem::path& dir) {
    std::vector<std::string> args;
    if (geteuid() == 0) args = {"-u", "postgres", "--", "/usr/bin/env"};
    args.insert(args.end(), {"-C", dir.string()});
    args.insert(args.end(), command.begin(), command.end());
    return run_process(geteuid() == 0 ? "/usr/sbin/runuser" : "/usr/bin/env", args);
  }

  static void check(const ProcessResult& r, const std::string& what,
                    const std::filesystem::path& log_dir) {
    if (r.exit_code != 0) {
      throw std::runtime_error(what + " failed (" + std::to_string(r.exit_code) + "): " + r.err +
                               r.out + slurp(log_dir / "server.log"));
    }
  }
  void check(const ProcessResult& r, const std::string& what) const { check(r, what, dir_.path()); }

  TempDir dir_;
  std::string data_;
};

}  // namespace sg::test
