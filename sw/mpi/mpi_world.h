// The MPI world of a tensorpod process (docs/scale.md, "Distributed simulation"): under mpirun
// (or another MPI launcher) MPI is initialised and the pod's chips are split over the ranks
// (golden::PodComm over MPI_COMM_WORLD); started on its own, the process is a world of one rank
// and MPI is never touched. Built without MPI (no OpenMPI found at configure time), a process
// that mpirun started with several ranks is refused.
#pragma once

#include <memory>

#include "pod_comm.h"

namespace tp::mpi {

// True when an MPI launcher started this process (its environment: OMPI_COMM_WORLD_SIZE,
// PMIX_RANK or PMI_SIZE).
bool launched();
// True when this build has MPI.
bool available();

class World {
 public:
  // MPI_Init when launched(); throws std::runtime_error when launched with several ranks in a
  // build without MPI.
  World(int* argc, char*** argv);
  ~World();  // MPI_Finalize
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  unsigned rank() const { return rank_; }
  unsigned size() const { return size_; }
  // The pod's communicator over every rank (nullptr for a world of one rank).
  std::shared_ptr<golden::PodComm> pod_comm();
  // Stops every rank (MPI_Abort): for an error that the other ranks may not have seen.
  [[noreturn]] void abort(int code);

 private:
  bool initialised_ = false;
  unsigned rank_ = 0, size_ = 1;
};

}  // namespace tp::mpi
