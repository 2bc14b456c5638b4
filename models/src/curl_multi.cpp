// SPDX-License-Identifier: MIT
#include "curl_multi.hpp"

#include <stategraph/models/chat_model.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/posix/basic_stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <curl/curl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>
#include <unordered_map>

#include "text.hpp"

// g++ 12 wrongly reports awaitable frames freed by the frame's own operator delete as mismatched
// (GCC bug 109224).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace sg::detail {
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

using models_detail::lower;
using models_detail::trim;

void curl_global_once() {
  static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (result != CURLE_OK) {
    throw ModelError(errc::kModelConnection,
                     std::string("curl_global_init failed: ") + curl_easy_strerror(result));
  }
}

/// A parked, move-only completion handler of signature void(), type-erased.
struct PendingHandler {
  virtual ~PendingHandler() = default;
  /// Posts the handler to its associated executor (the waiting coroutine's).
  virtual void post() = 0;
};

/// Resumes parked coroutines from a fresh stack on the context: never from inside curl's
/// callbacks or with a lock held, since posting to an executor may run the handler at once.
class Waker {
 public:
  virtual ~Waker() = default;
  virtual void schedule(std::unique_ptr<PendingHandler> handler) = 0;
};

template <class Handler>
struct PendingHandlerOf final : PendingHandler {
  explicit PendingHandlerOf(Handler h) : handler(std::move(h)) {}
  void post() override {
    auto executor = net::get_associated_executor(handler);
    net::post(executor, std::move(handler));
  }
  Handler handler;
};

/// The connections every multi of the process may hold open together: half the open-file limit,
/// since a served run holds its client's connection as well as its model's, less a reserve for
/// everything else (files, listeners, database connections). 0: no limit. Past it, curl queues
/// new transfers until a connection frees, instead of failing to open a socket.
long connection_budget() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  const auto soft = static_cast<long>(std::min<rlim_t>(limit.rlim_cur, 1L << 30));
  return std::max(4L, soft / 2 - std::min(1024L, soft / 4));
}

TransferEnd classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return TransferEnd::complete;
    case CURLE_OPERATION_TIMEDOUT:
      return TransferEnd::timeout;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return TransferEnd::connection;
    default:
      return TransferEnd::failed;
  }
}

/// The executor of curl's sockets and timers: the execution context (whose reactor watches
/// them) and inline execution, so their handlers run on the context's threads as they complete.
/// (The context's own executor types need the concrete io_context or thread_pool, which the
/// caller's executor does not give: it may be a wrapper such as a graph node's.) The handlers
/// take the multi's mutex themselves.
class ContextExecutor {
 public:
  explicit ContextExecutor(net::execution_context& context) noexcept : context_(&context) {}
  [[nodiscard]] net::execution_context& query(net::execution::context_t) const noexcept {
    return *context_;
  }
  static constexpr net::execution::blocking_t query(net::execution::blocking_t) noexcept {
    return net::execution::blocking.possibly;
  }
  template <class F>
  void execute(F f) const {
    f();
  }
  friend bool operator==(const ContextExecutor& a, const ContextExecutor& b) noexcept {
    return a.context_ == b.context_;
  }
  friend bool operator!=(const ContextExecutor& a, const ContextExecutor& b) noexcept {
    return !(a == b);
  }

 private:
  net::execution_context* context_;
};

using Timer = net::basic_waitable_timer<Clock, net::wait_traits<Clock>, ContextExecutor>;
using Descriptor = net::posix::basic_stream_descriptor<ContextExecutor>;

}  // namespace

struct HttpTransfer::Impl {
  // Set up by the constructor, then used only under the multi's mutex.
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  std::string body;
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::chrono::milliseconds idle_timeout{0};
  Clock::time_point last_activity{};
  std::optional<Timer> timer;  // the start delay, then the idle watch
  bool attached = false;       // in the multi handle
  bool ended = false;

  // Shared with the waiting coroutine.
  std::mutex mu;
  HttpProgress progress;  // data accumulates until take()
  std::vector<std::pair<std::string, std::string>> headers;
  bool headers_complete = false;  // the final response's header block ended
  bool headers_taken = false;     // take() gave them since they completed
  std::unique_ptr<PendingHandler> waiter;
  Waker* waker = nullptr;  // the multi's, set when it starts the transfer

  [[nodiscard]] bool ready() const {
    return !progress.data.empty() || progress.end != TransferEnd::none ||
           (headers_complete && !headers_taken);
  }

  /// Wakes the waiting coroutine, if any. `mu` held.
  void wake() {
    if (waiter && waker) waker->schedule(std::move(waiter));
  }

  static std::size_t on_write(char* data, std::size_t size, std::size_t count, void* user) {
    auto* self = static_cast<Impl*>(user);
    const std::size_t n = size * count;
    self->last_activity = Clock::now();
    std::lock_guard lock(self->mu);
    self->progress.data.append(data, n);
    self->wake();
    return n;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto* self = static_cast<Impl*>(user);
    const std::size_t n = size * count;
    self->last_activity = Clock::now();
    const std::string_view line = trim(std::string_view(data, n));
    std::lock_guard lock(self->mu);
    if (line.empty()) {  // the end of a header block: final unless informational (1xx)
      if (self->progress.status >= 200 && !self->headers_complete) {
        self->headers_complete = true;
        self->wake();
      }
    } else if (line.starts_with("HTTP/")) {  // a status line: a new response begins
      self->headers.clear();
      self->headers_complete = false;
      self->headers_taken = false;
      const std::size_t space = line.find(' ');
      int status = 0;
      for (std::size_t i = space == std::string_view::npos ? line.size() : space + 1;
           i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i) {
        status = status * 10 + (line[i] - '0');
      }
      self->progress.status = status;
    } else if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
      self->headers.emplace_back(lower(trim(line.substr(0, colon))),
                                 std::string(trim(line.substr(colon + 1))));
    }
    return n;
  }
};

HttpTransfer::HttpTransfer(const HttpRequestSpec& spec) : impl_(std::make_unique<Impl>()) {
  curl_global_once();
  Impl& t = *impl_;
  t.easy = curl_easy_init();
  if (!t.easy) throw ModelError(errc::kModelConnection, "curl_easy_init failed");
  for (const auto& h : spec.headers) {
    curl_slist* list = curl_slist_append(t.header_list, h.c_str());
    if (!list) throw ModelError(errc::kModelConnection, "curl_slist_append failed");
    t.header_list = list;
  }
  t.body = spec.body;
  t.idle_timeout = spec.idle_timeout;
  CURL* e = t.easy;
  curl_easy_setopt(e, CURLOPT_URL, spec.url.c_str());
  if (!spec.method.empty()) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, spec.method.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.header_list);
  if (!t.body.empty()) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.body.size()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t.body.data());
  }
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, impl_.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, impl_.get());
  curl_easy_setopt(e, CURLOPT_PRIVATE, this);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_buffer);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(spec.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(spec.total_timeout.count()));
}

HttpTransfer::~HttpTransfer() {
  // The multi released the handle (a transfer in it is kept alive by it) and its timer.
  if (impl_->easy) curl_easy_cleanup(impl_->easy);
  if (impl_->header_list) curl_slist_free_all(impl_->header_list);
}

net::awaitable<void> HttpTransfer::wait() {
  Impl* impl = impl_.get();
  {
    std::lock_guard lock(impl->mu);
    if (impl->ready()) co_return;
  }
  auto initiation = [impl](auto handler) {
    auto pending = std::make_unique<PendingHandlerOf<decltype(handler)>>(std::move(handler));
    std::unique_lock lock(impl->mu);
    if (impl->ready() && impl->waker) {  // arrived since the check above
      Waker* waker = impl->waker;
      lock.unlock();
      waker->schedule(std::move(pending));
      return;
    }
    impl->waiter = std::move(pending);
  };
  co_await net::async_initiate<const net::use_awaitable_t<>&, void()>(initiation,
                                                                      net::use_awaitable);
}

HttpProgress HttpTransfer::take() {
  std::lock_guard lock(impl_->mu);
  HttpProgress out;
  out.data = std::move(impl_->progress.data);
  impl_->progress.data.clear();
  out.status = impl_->progress.status;
  out.end = impl_->progress.end;
  if (out.end != TransferEnd::none) out.error = impl_->progress.error;
  if (out.end != TransferEnd::none || impl_->headers_complete) {
    out.headers = impl_->headers;
    out.headers_complete = impl_->headers_complete;
    impl_->headers_taken = impl_->headers_complete;
  }
  return out;
}

/// The multi handle of one execution context. Everything that touches it, curl's sockets or the
/// timers runs under mu_ (on whichever thread: a context thread completing a wait, a caller
/// starting or cancelling a transfer).
class AsioCurlMulti final : public CurlMulti,
                            public Waker,
                            public std::enable_shared_from_this<AsioCurlMulti> {
 public:
  explicit AsioCurlMulti(net::execution_context& context)
      : executor_(context),
        timer_(std::in_place, executor_),
        wake_timer_(std::in_place, executor_) {
    curl_global_once();
    multi_ = curl_multi_init();
    if (!multi_) throw ModelError(errc::kModelConnection, "curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &AsioCurlMulti::on_socket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &AsioCurlMulti::on_timer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    live().join();
  }

  ~AsioCurlMulti() override {
    live().leave();
    destroying_ = true;
    if (multi_) curl_multi_cleanup(multi_);  // closes cached connections (on_close_socket)
  }

  // Any thread.
  void start(const std::shared_ptr<HttpTransfer>& transfer,
             std::chrono::milliseconds delay) override {
    std::lock_guard lock(mu_);
    if (!shut_down_) begin(transfer, delay);
  }

  // Any thread.
  void cancel(const std::shared_ptr<HttpTransfer>& transfer) override {
    std::lock_guard lock(mu_);
    finish(transfer, TransferEnd::cancelled, "cancelled");
  }

  // Any thread; `mu_` may be held.
  void schedule(std::unique_ptr<PendingHandler> handler) override {
    std::unique_lock lock(wake_mu_);
    if (!wake_timer_) {  // shut down: the handler (a coroutine) is destroyed, unlocked
      lock.unlock();
      return;
    }
    wakes_.push_back(std::move(handler));
    if (wake_armed_) return;
    wake_armed_ = true;
    wake_timer_->expires_at(Clock::now());
    wake_timer_->async_wait([self = shared_from_this()](const boost::system::error_code&) {
      std::vector<std::unique_ptr<PendingHandler>> due;
      {
        std::lock_guard relock(self->wake_mu_);
        due.swap(self->wakes_);
        self->wake_armed_ = false;
      }
      for (auto& h : due) h->post();
    });
  }

  /// The context is shutting down (no handler runs any more): ends every transfer, gives curl's
  /// sockets back, drops the timers and the coroutines waiting to be resumed.
  void shutdown() {
    std::vector<std::unique_ptr<PendingHandler>> dropped;
    {
      std::lock_guard lock(mu_);
      shut_down_ = true;
      std::vector<std::shared_ptr<HttpTransfer>> left;
      for (auto& [raw, t] : transfers_) left.push_back(t);
      for (auto& t : left) finish(t, TransferEnd::cancelled, "the executor was shut down");
      for (auto& [fd, s] : sockets_) s->release();
      sockets_.clear();
      timer_.reset();
      std::lock_guard wake_lock(wake_mu_);
      dropped.swap(wakes_);
      wake_timer_.reset();
    }
    dropped.clear();  // destroys coroutine frames, which may call cancel(): no lock held
  }

 private:
  /// One of curl's sockets, watched through a descriptor that never closes it.
  struct Socket {
    explicit Socket(const ContextExecutor& executor) : descriptor(executor) {}
    ~Socket() { release(); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    void release() {
      if (descriptor.is_open()) descriptor.release();  // cancels the waits; curl closes the fd
    }
    Descriptor descriptor;
    int wanted = 0;  // CURL_POLL_IN / OUT / INOUT
    bool reading = false;
    bool writing = false;
  };

  void begin(const std::shared_ptr<HttpTransfer>& transfer, std::chrono::milliseconds delay) {
    HttpTransfer::Impl& t = *transfer->impl_;
    if (t.ended) return;  // cancelled before it started
    {
      std::lock_guard lock(t.mu);
      t.waker = this;
    }
    transfers_[transfer.get()] = transfer;
    if (delay.count() <= 0) {
      attach(transfer);
      return;
    }
    t.timer.emplace(executor_, delay);
    t.timer->async_wait([self = shared_from_this(), transfer](const boost::system::error_code& ec) {
      std::lock_guard lock(self->mu_);
      if (!ec && !transfer->impl_->ended && !self->shut_down_) self->attach(transfer);
    });
  }

  void attach(const std::shared_ptr<HttpTransfer>& transfer) {
    HttpTransfer::Impl& t = *transfer->impl_;
    curl_easy_setopt(t.easy, CURLOPT_CLOSESOCKETFUNCTION, &AsioCurlMulti::on_close_socket);
    curl_easy_setopt(t.easy, CURLOPT_CLOSESOCKETDATA, this);
    t.last_activity = Clock::now();
    if (const long share = live().share(); share != connection_share_) {
      curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, share);
      connection_share_ = share;
    }
    const CURLMcode rc = curl_multi_add_handle(multi_, t.easy);
    if (rc != CURLM_OK) {
      finish(transfer, TransferEnd::failed, curl_multi_strerror(rc));
      return;
    }
    t.attached = true;
    if (t.idle_timeout.count() > 0) {
      if (!t.timer) t.timer.emplace(executor_);
      watch_idle(transfer);
    }
  }

  void watch_idle(const std::shared_ptr<HttpTransfer>& transfer) {
    HttpTransfer::Impl& t = *transfer->impl_;
    t.timer->expires_at(t.last_activity + t.idle_timeout);
    t.timer->async_wait([self = shared_from_this(), transfer](const boost::system::error_code& ec) {
      std::lock_guard lock(self->mu_);
      HttpTransfer::Impl& ti = *transfer->impl_;
      if (ec || ti.ended || self->shut_down_) return;
      if (Clock::now() - ti.last_activity >= ti.idle_timeout) {
        self->finish(transfer, TransferEnd::idle_timeout,
                     "no data for " + std::to_string(ti.idle_timeout.count()) + " ms");
      } else {
        self->watch_idle(transfer);
      }
    });
  }

  /// Ends a transfer: out of the multi handle, timer gone, the waiting coroutine woken.
  void finish(std::shared_ptr<HttpTransfer> transfer, TransferEnd end, std::string error) {
    HttpTransfer::Impl& t = *transfer->impl_;
    if (t.ended) return;
    t.ended = true;
    if (t.attached) {
      t.attached = false;
      curl_multi_remove_handle(multi_, t.easy);
    }
    t.timer.reset();
    transfers_.erase(transfer.get());
    std::lock_guard lock(t.mu);
    t.progress.end = end;
    t.progress.error = std::move(error);
    t.wake();
  }

  void socket_action(curl_socket_t fd, int events) {
    int running = 0;
    curl_multi_socket_action(multi_, fd, events, &running);
    CURLMsg* message = nullptr;
    int left = 0;
    while ((message = curl_multi_info_read(multi_, &left)) != nullptr) {
      if (message->msg != CURLMSG_DONE) continue;
      const CURLcode code = message->data.result;
      HttpTransfer* raw = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &raw);
      const auto it = transfers_.find(raw);
      if (it == transfers_.end()) continue;
      const std::shared_ptr<HttpTransfer> transfer = it->second;
      std::string error;
      if (code != CURLE_OK) {
        error = transfer->impl_->error_buffer[0] != '\0' ? transfer->impl_->error_buffer
                                                         : curl_easy_strerror(code);
      }
      finish(transfer, classify(code), std::move(error));
    }
  }

  void watch(curl_socket_t fd, const std::shared_ptr<Socket>& socket) {
    watch_one(fd, socket, CURL_POLL_IN, &Socket::reading, Descriptor::wait_read, CURL_CSELECT_IN);
    watch_one(fd, socket, CURL_POLL_OUT, &Socket::writing, Descriptor::wait_write,
              CURL_CSELECT_OUT);
  }

  /// Waits once for `socket` to be ready in one direction, when curl wants it and no wait for it
  /// is pending.
  void watch_one(curl_socket_t fd, const std::shared_ptr<Socket>& socket, int poll,
                 bool Socket::*waiting, Descriptor::wait_type wait, int event) {
    if ((socket->wanted & poll) == 0 || (*socket).*waiting) return;
    (*socket).*waiting = true;
    socket->descriptor.async_wait(wait, [self = shared_from_this(), fd, socket, waiting,
                                         event](const boost::system::error_code& ec) {
      std::lock_guard lock(self->mu_);
      (*socket).*waiting = false;
      self->ready(fd, socket, ec, event);
    });
  }

  void ready(curl_socket_t fd, const std::shared_ptr<Socket>& socket,
             const boost::system::error_code& ec, int event) {
    if (ec == net::error::operation_aborted || shut_down_) return;
    auto it = sockets_.find(fd);
    if (it == sockets_.end() || it->second != socket) return;  // curl is done with it
    socket_action(fd, ec ? CURL_CSELECT_ERR : event);
    it = sockets_.find(fd);
    if (it != sockets_.end() && it->second == socket) watch(fd, socket);
  }

  void forget(curl_socket_t fd) {
    const auto it = sockets_.find(fd);
    if (it == sockets_.end()) return;
    const std::shared_ptr<Socket> socket = it->second;
    sockets_.erase(it);
    socket->release();
  }

  // curl's callbacks: called from inside curl_multi_* under mu_ (or from the destructor).
  static int on_socket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<AsioCurlMulti*>(user);
    if (what == CURL_POLL_REMOVE) {
      self->forget(fd);
      return 0;
    }
    if (self->destroying_ || self->shut_down_) return 0;
    std::shared_ptr<Socket>& socket = self->sockets_[fd];
    if (!socket) {
      auto fresh = std::make_shared<Socket>(self->executor_);
      boost::system::error_code ec;
      fresh->descriptor.assign(fd, ec);
      if (ec) {
        self->sockets_.erase(fd);
        return 0;  // not watchable: the transfer ends at its timeouts
      }
      socket = std::move(fresh);
    }
    socket->wanted = what;
    self->watch(fd, socket);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<AsioCurlMulti*>(user);
    if (self->destroying_ || self->shut_down_ || !self->timer_) return 0;
    if (timeout_ms < 0) {
      self->timer_->cancel();
      return 0;
    }
    self->timer_->expires_after(std::chrono::milliseconds(timeout_ms));
    self->timer_->async_wait(
        [self = self->shared_from_this()](const boost::system::error_code& ec) {
          std::lock_guard lock(self->mu_);
          if (!ec && !self->shut_down_) self->socket_action(CURL_SOCKET_TIMEOUT, 0);
        });
    return 0;
  }

  static int on_close_socket(void* user, curl_socket_t fd) {
    static_cast<AsioCurlMulti*>(user)->forget(fd);
    return ::close(fd);
  }

  /// How many multis the process has, and the share of connection_budget() each may open (an
  /// io_context per server thread has a multi each). A multi applies the share as it starts a
  /// transfer, under its own lock: this lock is taken alone, never with a multi's.
  class Live {
   public:
    void join() { change(+1); }
    void leave() { change(-1); }
    [[nodiscard]] long share() const noexcept { return share_.load(std::memory_order_relaxed); }

   private:
    void change(long by) {
      std::lock_guard lock(mu_);
      count_ += by;
      const long budget = connection_budget();
      share_ = budget == 0 ? 0 : std::max(1L, budget / std::max(1L, count_));
    }
    std::mutex mu_;
    long count_ = 0;
    std::atomic<long> share_{0};
  };
  static Live& live() {
    static auto* const instance = new Live;  // never destroyed: multis may outlive statics
    return *instance;
  }

  ContextExecutor executor_;
  std::optional<Timer> timer_;  // curl's timeout
  CURLM* multi_ = nullptr;
  std::unordered_map<curl_socket_t, std::shared_ptr<Socket>> sockets_;
  std::unordered_map<HttpTransfer*, std::shared_ptr<HttpTransfer>> transfers_;
  long connection_share_ = 0;  // CURLMOPT_MAX_TOTAL_CONNECTIONS as set (0: no limit)
  std::mutex mu_;              // guards everything above
  bool shut_down_ = false;
  // Coroutines to resume, from the wake timer's handler. Lock order: mu_, a transfer's mu,
  // wake_mu_.
  std::mutex wake_mu_;
  std::optional<Timer> wake_timer_;
  std::vector<std::unique_ptr<PendingHandler>> wakes_;
  bool wake_armed_ = false;
  bool destroying_ = false;
};

namespace {

/// The CurlMulti of an execution context, shut down with it.
class CurlService final : public net::execution_context::service {
 public:
  inline static net::execution_context::id id;  // NOLINT: Asio's service key

  explicit CurlService(net::execution_context& context)
      : service(context), multi_(std::make_shared<AsioCurlMulti>(context)) {}

  [[nodiscard]] std::shared_ptr<AsioCurlMulti> multi() const { return multi_; }

 private:
  void shutdown() override { multi_->shutdown(); }

  std::shared_ptr<AsioCurlMulti> multi_;
};

}  // namespace

std::shared_ptr<CurlMulti> CurlMulti::of(net::execution_context& context) {
  return net::use_service<CurlService>(context).multi();
}

}  // namespace sg::detail
