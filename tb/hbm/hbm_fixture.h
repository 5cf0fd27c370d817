// GoogleTest fixture shared by the HBM tests: the preset's HBM section, the test's seed and a
// harness around the Verilated top Top (one controller or the subsystem).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "config.h"
#include "hbm_harness.h"
#include "tb_util.h"

namespace tp::tb {

template <class Top>
class HbmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = tp::load_preset(TP_PRESET).hbm;
    seed_ = test_seed(current_test_name());
    rng_.seed(seed_);
    h_ = std::make_unique<HbmHarness<Top>>(cfg_, seed_);
  }
  tp::HbmConfig cfg_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<HbmHarness<Top>> h_;
};

}  // namespace tp::tb
