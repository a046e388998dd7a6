#include "serve/connections.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace linnet::serve {

using Clock = std::chrono::steady_clock;

// One client connection: its socket and the bytes read from it that no
// request has consumed yet (the rest of a header, a pipelined request).
struct Connection {
  int fd = -1;
  std::string pending;
  size_t head = 0;  // pending[head..] is unread
  Clock::time_point deadline;
  int served = 0;
  explicit Connection(int socket) : fd(socket) {}
  ~Connection() {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  std::string_view unread() const { return std::string_view(pending).substr(head); }
};

namespace {

// A header larger than this is handed to httplib as is, which refuses it.
constexpr size_t kHeaderCap = 64 << 10;
constexpr size_t kReadChunk = 16 << 10;

bool headerComplete(std::string_view bytes) {
  return bytes.find("\r\n\r\n") != std::string_view::npos || bytes.find("\n\n") != std::string_view::npos ||
         bytes.size() >= kHeaderCap;
}

int millisUntil(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

bool waitFor(int fd, short events, int timeoutMs) {
  pollfd p{fd, events, 0};
  int r;
  do r = ::poll(&p, 1, timeoutMs);
  while (r < 0 && errno == EINTR);
  return r > 0;
}

// Appends what the socket has now to c.pending (never blocks). False when
// the client has closed or the socket failed.
bool readAvailable(Connection& c) {
  if (c.head == c.pending.size()) c.pending.clear(), c.head = 0;
  size_t old = c.pending.size();
  c.pending.resize(old + kReadChunk);
  ssize_t n = ::recv(c.fd, c.pending.data() + old, kReadChunk, MSG_DONTWAIT);
  c.pending.resize(old + std::max<ssize_t>(n, 0));
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

void peerAddress(int fd, bool remote, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  int r = remote ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length)
                 : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  if (r != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// httplib reads and writes one request through this: reads come from the
// connection's pending bytes first, and whatever a read brings past the
// request stays there for the next one.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(Connection& c, const ConnectionLimits& limits)
      : c_(c), readDeadline_(Clock::now() + limits.readBody),
        writeTimeoutMs_(static_cast<int>(std::chrono::milliseconds(limits.write).count())) {}

  bool is_readable() const override {
    return !c_.unread().empty() || waitFor(c_.fd, POLLIN, millisUntil(readDeadline_));
  }
  bool is_writable() const override { return waitFor(c_.fd, POLLOUT, writeTimeoutMs_) && alive(); }

  ssize_t read(char* ptr, size_t size) override {
    if (c_.unread().empty()) {
      if (!waitFor(c_.fd, POLLIN, millisUntil(readDeadline_))) return -1;
      if (!readAvailable(c_)) return c_.unread().empty() ? 0 : -1;
      if (c_.unread().empty()) return -1;
    }
    size_t n = std::min(size, c_.unread().size());
    std::memcpy(ptr, c_.pending.data() + c_.head, n);
    c_.head += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!waitFor(c_.fd, POLLOUT, writeTimeoutMs_)) return -1;
    return ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { peerAddress(c_.fd, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { peerAddress(c_.fd, false, ip, port); }
  socket_t socket() const override { return c_.fd; }

 private:
  // A client that has closed reads as end of file (a pipelined request
  // waiting in pending is a live client).
  bool alive() const {
    if (!c_.unread().empty()) return true;
    char byte;
    ssize_t n = ::recv(c_.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  Connection& c_;
  Clock::time_point readDeadline_;
  int writeTimeoutMs_;
};

// httplib's accept loop hands each socket to process_and_close_socket
// through its task queue; that call only parks the socket, so it runs inline.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// A client whose header did not arrive in time is told so (best effort).
void sendTimeout(Connection& c) {
  if (c.unread().empty()) return;
  static constexpr std::string_view reply =
      "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  [[maybe_unused]] ssize_t n = ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

ConnectionServer::ConnectionServer(ConnectionLimits limits)
    : limits_(limits), workers_(static_cast<size_t>(std::max(limits.workers, 1))) {
  // Waiting sockets count against the open-file limit, with the workers' and the model's files.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    limits_.maxWaiting = std::clamp<size_t>(files.rlim_cur / 2, 16, limits_.maxWaiting);
  new_task_queue = [] { return new InlineQueue; };
  // What httplib itself writes in `Keep-Alive: timeout=N, max=M`.
  set_keep_alive_timeout(limits_.keepAlive.count());
  set_keep_alive_max_count(static_cast<size_t>(limits_.requestsPerConnection));
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  room_ = std::thread([this] { roomLoop(); });
}

ConnectionServer::~ConnectionServer() {
  if (room_.joinable()) closeAll();
  ::close(wake_);
}

bool ConnectionServer::serve() {
  bool ok = listen_after_bind();
  closeAll();
  return ok;
}

void ConnectionServer::wakeRoom() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
}

// The waiting connections are closed; the requests being served finish.
void ConnectionServer::closeAll() {
  stopping_ = true;
  wakeRoom();
  room_.join();
  workers_.shutdown();
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  auto c = std::make_unique<Connection>(sock);
  c->deadline = Clock::now() + limits_.header;
  admit(std::move(c));
  return true;
}

void ConnectionServer::admit(std::unique_ptr<Connection> c) {
  if (stopping_) return;  // closed
  {
    std::lock_guard<std::mutex> lock(arrivalsMutex_);
    arrivals_.push_back(std::move(c));
  }
  wakeRoom();
}

// Moves arrivals into the room; past maxWaiting, the connections closest to
// their deadline are closed.
void ConnectionServer::takeArrivals(std::vector<std::unique_ptr<Connection>>& waiting) {
  {
    std::lock_guard<std::mutex> lock(arrivalsMutex_);
    for (auto& c : arrivals_) waiting.push_back(std::move(c));
    arrivals_.clear();
  }
  while (waiting.size() > std::max<size_t>(limits_.maxWaiting, 1)) {
    auto oldest = std::min_element(waiting.begin(), waiting.end(),
                                   [](const auto& a, const auto& b) { return a->deadline < b->deadline; });
    std::swap(*oldest, waiting.back());
    waiting.pop_back();
  }
}

void ConnectionServer::roomLoop() {
  std::vector<std::unique_ptr<Connection>> waiting;
  std::vector<pollfd> fds;
  while (!stopping_) {
    takeArrivals(waiting);
    fds.assign(1, pollfd{wake_, POLLIN, 0});
    Clock::time_point next = Clock::time_point::max();
    for (auto& c : waiting) {
      fds.push_back(pollfd{c->fd, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    int r = ::poll(fds.data(), fds.size(), waiting.empty() ? -1 : millisUntil(next));
    if (r < 0 && errno != EINTR) break;
    uint64_t count;
    if (fds[0].revents) [[maybe_unused]]
      ssize_t n = ::read(wake_, &count, sizeof count);
    Clock::time_point now = Clock::now();
    for (size_t i = 0; i < waiting.size(); ++i) {
      Connection& c = *waiting[i];
      if (fds[i + 1].revents) {
        if (!readAvailable(c)) waiting[i].reset();
        else if (headerComplete(c.unread())) dispatch(std::move(waiting[i]));
      } else if (now >= c.deadline) {
        sendTimeout(c);
        waiting[i].reset();
      }
    }
    std::erase(waiting, nullptr);
  }
}

void ConnectionServer::dispatch(std::unique_ptr<Connection> c) {
  Connection* raw = c.release();
  workers_.enqueue([this, raw] { serveOne(std::unique_ptr<Connection>(raw)); });
}

// One request on a worker; then the connection goes back to the room, or
// straight to another worker when the next request is already in.
void ConnectionServer::serveOne(std::unique_ptr<Connection> c) {
  bool last = stopping_ || c->served + 1 >= limits_.requestsPerConnection;
  bool clientClosing = false;
  bool ok;
  {
    ConnectionStream stream(*c, limits_);
    ok = process_request(stream, last, clientClosing, nullptr);
  }
  ++c->served;
  if (!ok || last || clientClosing || stopping_) return;  // closed
  c->deadline = Clock::now() + limits_.keepAlive;
  if (headerComplete(c->unread())) dispatch(std::move(c));
  else admit(std::move(c));
}

}  // namespace linnet::serve
