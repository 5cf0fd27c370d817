// Distributed runs of the golden pod (docs/scale.md, "Distributed simulation"): the pod's chips
// are split over ranks, one block of chips per rank; each rank runs its own chips, and what
// crosses ranks (the rounds' messages, the host's reads, the results) goes through a PodComm.
//
// Every rank makes the same calls in the same order (the host code runs on every rank, SPMD):
// each call is collective. Two implementations: MPI (sw/mpi/mpi_world.h, `mpirun -np R tensorpod
// pod ...`) and threads of one process (thread_comms below, for the tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tp::golden {

using Bytes = std::vector<uint8_t>;

class PodComm {
 public:
  virtual ~PodComm() = default;
  virtual unsigned rank() const = 0;
  virtual unsigned ranks() const = 0;
  // to[r] goes to rank r (to.size() == ranks(); to[rank()] comes back to this rank); returns what
  // each rank sent to this one, by rank.
  virtual std::vector<Bytes> exchange(const std::vector<Bytes>& to) = 0;
  // root's bytes, on every rank (the others' argument is ignored).
  virtual Bytes broadcast(Bytes bytes, unsigned root) = 0;

  // Every rank's bytes, by rank, on every rank.
  std::vector<Bytes> all_gather(const Bytes& mine) { return exchange(std::vector<Bytes>(ranks(), mine)); }

  // Wall time spent in the calls above (moving bytes, and waiting for the slowest rank), the
  // number of calls and the bytes sent: the synchronisation's cost.
  double sync_seconds() const { return sync_seconds_; }
  uint64_t syncs() const { return syncs_; }
  uint64_t bytes_out() const { return bytes_out_; }  // sent to other ranks (a broadcast: by its root)

 protected:
  // What an exchange sends to the other ranks.
  uint64_t bytes_to_others(const std::vector<Bytes>& to) const {
    uint64_t n = 0;
    for (std::size_t r = 0; r < to.size(); ++r) n += r == rank() ? 0 : to[r].size();
    return n;
  }
  // A call's bookkeeping: one more, its time since t0, the bytes it sent to other ranks.
  void count_sync(std::chrono::steady_clock::time_point t0, uint64_t bytes_out) {
    sync_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++syncs_;
    bytes_out_ += bytes_out;
  }

 private:
  double sync_seconds_ = 0;
  uint64_t syncs_ = 0, bytes_out_ = 0;
};

// R communicators over R threads of this process (rank r: element r). Each thread must make the
// same calls in the same order; a thread that stops calling blocks the others.
std::vector<std::shared_ptr<PodComm>> thread_comms(unsigned ranks);

// Serialisation of the values that cross ranks: little-endian as the host stores them (every
// rank runs on the same kind of host).
class ByteWriter {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  template <class T>
  void put_span(std::span<const T> v) {
    put<uint64_t>(v.size());
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size_bytes());
  }
  void put_string(const std::string& s) { put_span(std::span<const char>(s.data(), s.size())); }
  Bytes& bytes() { return out_; }

 private:
  Bytes out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}
  template <class T>
  T get() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> get_vector() {
    const uint64_t n = get<uint64_t>();
    if (n > (in_.size() - at_) / sizeof(T)) throw std::runtime_error("ByteReader: a vector runs past the message");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  std::string get_string() {
    const auto v = get_vector<char>();
    return std::string(v.begin(), v.end());
  }
  bool done() const { return at_ == in_.size(); }

 private:
  void take(void* to, std::size_t n) {
    if (n > in_.size() - at_) throw std::runtime_error("ByteReader: the message is shorter than its contents");
    std::memcpy(to, in_.data() + at_, n);
    at_ += n;
  }
  std::span<const uint8_t> in_;
  std::size_t at_ = 0;
};

}  // namespace tp::golden
