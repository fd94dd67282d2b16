// Work an object posts to a shared pool (a timer, a completion) may come
// due after the object is gone. A Lifeline wraps such work: a wrapped call
// runs only while its owner keeps the line open, and Close() waits for the
// calls running, so that after it nothing posted touches the owner.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace eco {

class Lifeline {
 public:
  // `fn`, to run only if the line is still open then.
  std::function<void()> Wrap(std::function<void()> fn) const {
    return [st = st_, fn = std::move(fn)] {
      {
        std::lock_guard<std::mutex> g(st->mu);
        if (!st->open) return;
        ++st->running;
      }
      fn();
      std::lock_guard<std::mutex> g(st->mu);
      if (--st->running == 0) st->cv.notify_all();
    };
  }
  // Idempotent. Must not be called from a wrapped call (it would wait for itself).
  void Close() {
    std::unique_lock<std::mutex> g(st_->mu);
    st_->open = false;
    st_->cv.wait(g, [this] { return st_->running == 0; });
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = true;
    int running = 0;
  };
  std::shared_ptr<State> st_ = std::make_shared<State>();
};

}  // namespace eco
