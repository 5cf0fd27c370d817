#include "pod_comm.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace tp::golden {

namespace {

// What the threads share: a mailbox per (from, to) and a reusable barrier.
struct Hub {
  explicit Hub(unsigned n) : ranks(n), box(std::size_t{n} * n) {}

  void barrier() {
    std::unique_lock lock(mu);
    const uint64_t gen = generation;
    if (++arrived == ranks) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
  }

  const unsigned ranks;
  std::vector<Bytes> box;  // box[from * ranks + to]
  std::mutex mu;
  std::condition_variable cv;
  unsigned arrived = 0;
  uint64_t generation = 0;
};

class ThreadComm final : public PodComm {
 public:
  ThreadComm(std::shared_ptr<Hub> hub, unsigned rank) : hub_(std::move(hub)), rank_(rank) {}
  unsigned rank() const override { return rank_; }
  unsigned ranks() const override { return hub_->ranks; }

  std::vector<Bytes> exchange(const std::vector<Bytes>& to) override {
    if (to.size() != ranks()) throw std::invalid_argument("PodComm::exchange: one byte string per rank");
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned n = ranks();
    for (unsigned r = 0; r < n; ++r) hub_->box[rank_ * n + r] = to[r];
    hub_->barrier();  // every rank's strings are in
    std::vector<Bytes> from(n);
    for (unsigned r = 0; r < n; ++r) from[r] = hub_->box[r * n + rank_];
    hub_->barrier();  // every rank has read: the boxes may be written again
    count_sync(t0, bytes_to_others(to));
    return from;
  }

  Bytes broadcast(Bytes bytes, unsigned root) override {
    if (root >= ranks()) throw std::invalid_argument("PodComm::broadcast: no such root rank");
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t sent = rank_ == root ? bytes.size() * (ranks() - 1) : 0;
    if (rank_ == root) hub_->box[root] = std::move(bytes);
    hub_->barrier();
    Bytes out = hub_->box[root];
    hub_->barrier();
    count_sync(t0, sent);
    return out;
  }

 private:
  std::shared_ptr<Hub> hub_;
  unsigned rank_;
};

}  // namespace

std::vector<std::shared_ptr<PodComm>> thread_comms(unsigned ranks) {
  if (ranks == 0) throw std::invalid_argument("thread_comms: at least one rank");
  auto hub = std::make_shared<Hub>(ranks);
  std::vector<std::shared_ptr<PodComm>> out;
  for (unsigned r = 0; r < ranks; ++r) out.push_back(std::make_shared<ThreadComm>(hub, r));
  return out;
}

}  // namespace tp::golden
