// Internal to src/k8s: a few epoll threads that drive every HTTP/2
// connection of the process (h2_connection.h), so ten thousand clusters
// cost a handful of threads, not one each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace eco::k8s {

class IoLoop {
 public:
  // Called on the loop thread with the epoll events that fired.
  using IoHandler = std::function<void(uint32_t events)>;

  IoLoop();
  ~IoLoop();  // stops the thread; work still posted is dropped
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  // Runs `fn` on the loop thread, in the order posted. Any thread.
  void Post(std::function<void()> fn);
  bool InLoop() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Loop thread only. Watch adds or changes what `fd` waits for; Unwatch
  // must come before the descriptor is closed.
  void Watch(int fd, uint32_t events, IoHandler handler);
  void Unwatch(int fd);

  // One of the process's shared loops (two threads), taken in turn.
  static IoLoop& Shared();

 private:
  void Run();
  void Wake();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;                     // guarded by mu_
  bool stop_ = false;                                             // guarded by mu_
  std::unordered_map<int, std::shared_ptr<IoHandler>> handlers_;  // loop thread only
  std::thread thread_;
};

// Runs a blocking name lookup off the loop threads (getaddrinfo may wait on
// DNS for seconds); `fn` is called on the resolver's thread.
void RunBlocking(std::function<void()> fn);

}  // namespace eco::k8s
