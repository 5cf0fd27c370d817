#include "mpi_world.h"

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <stdexcept>

#ifdef TP_HAVE_MPI
#include <mpi.h>
#endif

namespace tp::mpi {

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

#ifdef TP_HAVE_MPI

bool available() { return true; }

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("MPI: {} failed (error {})", what, rc));
}

int as_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(fmt::format("MPI: {} of {} bytes is past MPI's 2 GiB count", what, n));
  return static_cast<int>(n);
}

// One MPI_Alltoall of the sizes and one MPI_Alltoallv of the bytes per exchange; a broadcast is a
// size then the bytes.
class MpiComm final : public golden::PodComm {
 public:
  MpiComm(unsigned rank, unsigned size) : rank_(rank), size_(size) {}
  unsigned rank() const override { return rank_; }
  unsigned ranks() const override { return size_; }

  std::vector<golden::Bytes> exchange(const std::vector<golden::Bytes>& to) override {
    if (to.size() != size_) throw std::invalid_argument("PodComm::exchange: one byte string per rank");
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<int> send_n(size_), recv_n(size_), send_at(size_), recv_at(size_);
    std::size_t total = 0;
    for (unsigned r = 0; r < size_; ++r) {
      send_n[r] = as_count(to[r].size(), "a message");
      send_at[r] = as_count(total, "a round's messages");
      total += to[r].size();
    }
    golden::Bytes send;
    send.reserve(total);
    for (const auto& b : to) send.insert(send.end(), b.begin(), b.end());
    check(MPI_Alltoall(send_n.data(), 1, MPI_INT, recv_n.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Alltoall");
    std::size_t in = 0;
    for (unsigned r = 0; r < size_; ++r) {
      recv_at[r] = as_count(in, "a round's messages");
      in += static_cast<std::size_t>(recv_n[r]);
    }
    golden::Bytes recv(in);
    check(MPI_Alltoallv(send.data(), send_n.data(), send_at.data(), MPI_BYTE, recv.data(), recv_n.data(),
                        recv_at.data(), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Alltoallv");
    std::vector<golden::Bytes> out(size_);
    for (unsigned r = 0; r < size_; ++r)
      out[r].assign(recv.begin() + recv_at[r], recv.begin() + recv_at[r] + recv_n[r]);
    count_sync(t0, bytes_to_others(to));
    return out;
  }

  golden::Bytes broadcast(golden::Bytes bytes, unsigned root) override {
    if (root >= size_) throw std::invalid_argument("PodComm::broadcast: no such root rank");
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t n = bytes.size();
    check(MPI_Bcast(&n, 1, MPI_UINT64_T, static_cast<int>(root), MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(n);
    check(MPI_Bcast(bytes.data(), as_count(n, "a broadcast"), MPI_BYTE, static_cast<int>(root), MPI_COMM_WORLD),
          "MPI_Bcast");
    count_sync(t0, rank_ == root ? n * (size_ - 1) : 0);
    return bytes;
  }

 private:
  unsigned rank_, size_;
};

}  // namespace

World::World(int* argc, char*** argv) {
  if (!launched()) return;
  check(MPI_Init(argc, argv), "MPI_Init");
  initialised_ = true;
  int r = 0, s = 1;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &s), "MPI_Comm_size");
  rank_ = static_cast<unsigned>(r);
  size_ = static_cast<unsigned>(s);
}

World::~World() {
  if (initialised_) MPI_Finalize();
}

std::shared_ptr<golden::PodComm> World::pod_comm() {
  if (size_ <= 1) return nullptr;
  return std::make_shared<MpiComm>(rank_, size_);
}

void World::abort(int code) {
  if (initialised_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else  // built without MPI

bool available() { return false; }

World::World(int*, char***) {
  if (!launched()) return;
  // One rank is harmless; any other count (or one the launcher does not say) is refused.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n != nullptr && std::string(n) == "1") return;
  throw std::runtime_error(
      "started by an MPI launcher, but this build has no MPI (install libopenmpi-dev and reconfigure: "
      "scripts/install-deps.sh)");
}

World::~World() = default;

std::shared_ptr<golden::PodComm> World::pod_comm() { return nullptr; }

void World::abort(int code) { std::_Exit(code); }

#endif

}  // namespace tp::mpi
