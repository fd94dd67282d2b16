#include "k8s/io_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>

namespace eco::k8s {

IoLoop::IoLoop() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
}

IoLoop::~IoLoop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  close(epoll_fd_);
  close(wake_fd_);
}

void IoLoop::Post(std::function<void()> fn) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    first = posted_.empty();
    posted_.push_back(std::move(fn));
  }
  if (first) Wake();
}

void IoLoop::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;  // EAGAIN: a wake-up is pending already
}

void IoLoop::Watch(int fd, uint32_t events, IoHandler handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  auto [it, added] = handlers_.try_emplace(fd);
  it->second = std::make_shared<IoHandler>(std::move(handler));
  if (epoll_ctl(epoll_fd_, added ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0) {
    epoll_ctl(epoll_fd_, added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  }
}

void IoLoop::Unwatch(int fd) {
  if (handlers_.erase(fd) != 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void IoLoop::Run() {
  std::array<epoll_event, 256> events{};
  std::vector<std::function<void()>> work;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      work.swap(posted_);
    }
    for (auto& fn : work) fn();
    work.clear();
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        ssize_t r = read(wake_fd_, &count, sizeof count);
        (void)r;
        continue;
      }
      auto it = handlers_.find(fd);
      if (it == handlers_.end()) continue;
      std::shared_ptr<IoHandler> h = it->second;  // the handler may Unwatch itself
      (*h)(events[i].events);
    }
  }
}

IoLoop& IoLoop::Shared() {
  // Never destroyed: connections may outlive static destruction order.
  static auto* loops = new std::array<IoLoop, 2>();
  static std::atomic<size_t> next{0};
  return (*loops)[next.fetch_add(1, std::memory_order_relaxed) % loops->size()];
}

void RunBlocking(std::function<void()> fn) {
  struct Resolver {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    Resolver() {
      std::thread([this] {
        for (;;) {
          std::function<void()> job;
          {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return !jobs.empty(); });
            job = std::move(jobs.front());
            jobs.pop_front();
          }
          job();
        }
      }).detach();
    }
  };
  static auto* resolver = new Resolver();
  {
    std::lock_guard<std::mutex> lock(resolver->mu);
    resolver->jobs.push_back(std::move(fn));
  }
  resolver->cv.notify_one();
}

}  // namespace eco::k8s
