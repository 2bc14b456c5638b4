#pragma once

// A throwaway PostgreSQL 15 cluster for a test: initdb in a temp dir, a server on a unix socket
// of its own (no TCP port to collide on), stopped by its pid and removed when the fixture goes.
// As root, initdb and pg_ctl run as the `postgres` user (initdb refuses root). Recipe and timings:
// design/server-and-postgres.md §5 (about 0.6 s to make and start).

#include <pwd.h>
#include <signal.h>
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
    data_ = dir_.sub("data");
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (chown(dir_.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::runtime_error("chown of the cluster directory failed");
      }
    }
    check(run({kPostgresBin + "/initdb", "-D", data_, "-U", "postgres", "-A", "trust", "-E", "UTF8",
               "--locale=C.UTF-8", "--no-sync"}),
          "initdb");
    start();
    check(run({kPostgresBin + "/createdb", "-h", dir_.path().string(), "-p", port(), "-U",
               "postgres", "sgtest"}),
          "createdb");
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
  void start() {
    check(run({kPostgresBin + "/pg_ctl", "-D", data_, "-l", dir_.sub("server.log"), "-w", "-t",
               "30", "-s", "-o",
               "-c listen_addresses='' -p " + port() + " -k " + dir_.path().string() +
                   " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                   " -c max_connections=200",
               "start"}),
          "pg_ctl start");
  }

  /// Stops the server (fast: open connections are cut) and waits for the postmaster to exit.
  void stop() {
    const std::optional<pid_t> pid = postmaster_pid();
    if (!pid) return;
    (void)run({kPostgresBin + "/pg_ctl", "-D", data_, "-m", "fast", "-w", "-s", "stop"});
    for (int i = 0; i < 300 && kill(*pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  /// The server log (for failure messages).
  [[nodiscard]] std::string log() const { return slurp(dir_.path() / "server.log"); }

 private:
  [[nodiscard]] std::string port() const { return "54329"; }  // names the socket file only

  [[nodiscard]] std::optional<pid_t> postmaster_pid() const {
    std::ifstream in(data_ + "/postmaster.pid");
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) return std::nullopt;
    return pid;
  }

  /// Runs a PostgreSQL program, as `postgres` when this process is root.
  static ProcessResult run(std::vector<std::string> command) {
    if (geteuid() != 0) {
      const std::string program = command.front();
      command.erase(command.begin());
      return run_process(program, command);
    }
    std::vector<std::string> args{"-u", "postgres", "--"};
    args.insert(args.end(), command.begin(), command.end());
    return run_process("/usr/sbin/runuser", args);
  }

  void check(const ProcessResult& r, const std::string& what) const {
    if (r.exit_code != 0) {
      throw std::runtime_error(what + " failed (" + std::to_string(r.exit_code) + "): " + r.err +
                               r.out + log());
    }
  }

  TempDir dir_;
  std::string data_;
};

}  // namespace sg::test
