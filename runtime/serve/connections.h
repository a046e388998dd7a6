// Connection handling for `linnet serve`: an httplib::Server whose workers
// only ever run requests. cpp-httplib 0.11 gives each connection a worker
// from accept to close, so idle keep-alive clients and clients that send
// their headers a byte at a time hold every worker and /health waits
// behind them; it also reads each request through a fresh buffer, so
// pipelined requests after the first are lost. Here a connection waits for
// its next request in one poll thread (the waiting room) until its whole
// header has arrived, under a deadline, and goes back there between
// requests; the bytes it sent past a request are kept for the next one.
// The room holds at most `maxWaiting` connections: past that the one
// closest to its deadline is closed, so new clients are never refused.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace linnet::serve {

struct ConnectionLimits {
  int workers = 16;                   // requests served at once (a stream holds one)
  size_t maxWaiting = 4096;           // connections waiting for a request
  std::chrono::seconds header{10};    // from accept to a whole request header
  std::chrono::seconds keepAlive{5};  // idle between requests on one connection
  std::chrono::seconds readBody{30};  // reading one request once its header is in
  std::chrono::seconds write{10};     // each write of a response
  int requestsPerConnection = 100;    // then `Connection: close`
};

struct Connection;

class ConnectionServer : public httplib::Server {
 public:
  explicit ConnectionServer(ConnectionLimits limits);
  ~ConnectionServer() override;
  // listen_after_bind(), then closes the waiting connections and waits for
  // the requests being served to finish.
  bool serve();
  const ConnectionLimits& limits() const { return limits_; }

 private:
  // Called by httplib's accept loop for each new socket (on that thread,
  // through an inline task queue): the socket joins the waiting room.
  bool process_and_close_socket(socket_t sock) override;
  void admit(std::unique_ptr<Connection> c);
  void wakeRoom();
  void closeAll();
  void roomLoop();
  void takeArrivals(std::vector<std::unique_ptr<Connection>>& waiting);
  void dispatch(std::unique_ptr<Connection> c);
  void serveOne(std::unique_ptr<Connection> c);

  ConnectionLimits limits_;
  httplib::ThreadPool workers_;
  std::atomic<bool> stopping_{false};
  int wake_ = -1;  // eventfd: arrivals, stop
  std::mutex arrivalsMutex_;
  std::vector<std::unique_ptr<Connection>> arrivals_;
  std::thread room_;
};

}  // namespace linnet::serve
