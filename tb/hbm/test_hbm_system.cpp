// The HBM subsystem (rtl/hbm/tp_hbm.sv): channels x pseudo-channels controllers behind one
// port, each with its own device model. Requests spread over the pseudo-channels; responses
// stay in order per ID across them; every read returns the last write; no timing violation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include TP_HBM_SYS_HEADER
#include "config.h"
#include "hbm_fixture.h"
#include "tb_util.h"

namespace {

class HbmSystem : public tp::tb::HbmTest<TP_HBM_SYS_CLASS> {
 protected:
  // The ECC tests' window: 512 bursts per pseudo-channel written with random data (returns the
  // window's size).
  uint32_t write_window() {
    const uint32_t window = 64 * 8 * h_->channels();
    for (uint32_t a = 0; a < window; ++a) {
      tp::tb::HbmRequest r{true, a, a % 16, {}, ~0u, 0};
      for (auto& x : r.data.b) x = static_cast<uint8_t>(rng_());
      h_->queue(r);
    }
    h_->run();
    return window;
  }

  // Calls flip(channel, bank, row, column, i) for the i-th burst the devices hold (scanning them, so the
  // tests do not repeat the address map; an unwritten burst reads as zeros); returns how many.
  template <class Flip>
  uint64_t for_each_stored(Flip&& flip) {
    const unsigned banks = cfg_.bank_groups * cfg_.banks_per_group;
    uint64_t stored = 0;
    for (unsigned c = 0; c < h_->channels(); ++c)
      for (unsigned b = 0; b < banks; ++b)
        for (unsigned row = 0; row < 4; ++row)
          for (unsigned col = 0; col < cfg_.columns; ++col) {
            const auto d = h_->device(c).peek(b, row, col);
            if (std::all_of(d.begin(), d.end(), [](uint8_t x) { return x == 0; })) continue;
            flip(c, b, row, col, stored++);
          }
    return stored;
  }
};

TEST_F(HbmSystem, TrafficOverEveryPseudoChannelInOrderPerId) {
  ASSERT_GE(h_->channels(), 2u) << "the test preset should have several pseudo-channels";
  // Addresses over a window that covers every pseudo-channel many times, with repeats.
  const uint32_t window = 64 * 8 * h_->channels();
  const uint64_t requests = 4000 * tp::tb::soak_scale();  // make soak: TP_SOAK times as many
  for (uint64_t i = 0; i < requests; ++i) {
    tp::tb::HbmRequest r;
    r.write = std::bernoulli_distribution(0.4)(rng_);
    r.addr = static_cast<uint32_t>(rng_() % window);
    r.id = static_cast<unsigned>(rng_() % 16);
    for (auto& x : r.data.b) x = static_cast<uint8_t>(rng_());
    h_->queue(r);
  }
  ASSERT_NO_THROW(h_->run(0.2, 0.3, 5'000'000 * tp::tb::soak_scale()));  // the watchdog grows with the soak
  for (const auto& e : h_->errors()) ADD_FAILURE() << e;
  EXPECT_EQ(h_->mismatches(), 0u);
  uint64_t total = 0;
  for (unsigned c = 0; c < h_->channels(); ++c) {
    const uint64_t n = h_->top().cnt_reads_o[c] + h_->top().cnt_writes_o[c];
    EXPECT_GT(n, 0u) << "pseudo-channel " << c << " got no requests";
    total += n;
    ASSERT_NO_THROW(h_->device(c).check_refresh(h_->cycle()));
  }
  EXPECT_EQ(total, requests);
  tp::tb::soak_report("hbm_system", requests, h_->cycle(), "random requests over every pseudo-channel");
}

// Requests of 1 to 16 bursts (crossing pseudo-channel blocks), reads and writes, random IDs and
// stalls: every burst of a read returns the last data written, in order per ID.
TEST_F(HbmSystem, MultiBurstRequestsReturnEveryBurstInOrder) {
  const uint32_t window = 64 * 8 * h_->channels();
  unsigned bursts = 0;
  for (unsigned i = 0; i < 800; ++i) {
    const bool write = std::bernoulli_distribution(0.4)(rng_);
    const unsigned len = static_cast<unsigned>(rng_() % 16);
    const uint32_t addr = static_cast<uint32_t>(rng_() % (window - 16));
    std::vector<tp::tb::HbmBurst> data(write ? len + 1 : 0);
    for (auto& d : data)
      for (auto& x : d.b) x = static_cast<uint8_t>(rng_());
    h_->queue_bursts(write, addr, static_cast<unsigned>(rng_() % 16), len, data);
    bursts += len + 1;
  }
  ASSERT_NO_THROW(h_->run(0.2, 0.3));
  for (const auto& e : h_->errors()) ADD_FAILURE() << e;
  EXPECT_EQ(h_->mismatches(), 0u);
  EXPECT_GT(h_->reads_checked(), 2000u);
  uint64_t total = 0;
  for (unsigned c = 0; c < h_->channels(); ++c) total += h_->top().cnt_reads_o[c] + h_->top().cnt_writes_o[c];
  EXPECT_EQ(total, bursts) << "one controller request per burst";
}

TEST_F(HbmSystem, SequentialBlocksInterleaveOverPseudoChannels) {
  // 8-burst blocks go to consecutive pseudo-channels: a sequential stream uses all of them.
  for (uint32_t a = 0; a < 64u * h_->channels(); ++a) h_->queue({false, a, a % 8, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());
  for (unsigned c = 0; c < h_->channels(); ++c) EXPECT_EQ(h_->top().cnt_reads_o[c], 64u) << "pseudo-channel " << c;
}

// Single-bit errors under the subsystem: every burst of the window written, then one stored bit
// of each burst flips in its pseudo-channel's device, and every burst is read back twice: the
// reads return the written data, and each pseudo-channel's cnt_ecc_corrected_o counts its
// corrections (the flips it holds, twice), cnt_ecc_fatal_o none.
TEST_F(HbmSystem, SingleBitErrorsAreCorrectedInEveryPseudoChannel) {
  uint32_t window = 0;
  ASSERT_NO_THROW(window = write_window());
  std::vector<uint64_t> flips(h_->channels(), 0);
  const uint64_t stored = for_each_stored([&](unsigned c, unsigned b, unsigned row, unsigned col, uint64_t) {
    h_->device(c).flip_stored_bit(b, row, col, static_cast<unsigned>(rng_() % 288));
    ++flips[c];
  });
  ASSERT_EQ(stored, window) << "every written burst found once in the devices";
  for (unsigned k = 0; k < 2; ++k)
    for (uint32_t a = 0; a < window; ++a) h_->queue({false, a, a % 16, {}, 0, 0});
  ASSERT_NO_THROW(h_->run(0.2, 0.3));
  for (const auto& e : h_->errors()) ADD_FAILURE() << e;
  EXPECT_EQ(h_->mismatches(), 0u) << "a corrected read returned other data";
  EXPECT_EQ(h_->reads_checked(), 2ull * window);
  for (unsigned c = 0; c < h_->channels(); ++c) {
    EXPECT_EQ(h_->top().cnt_ecc_corrected_o[c], 2 * flips[c]) << "pseudo-channel " << c;
    EXPECT_EQ(h_->top().cnt_ecc_fatal_o[c], 0u) << "pseudo-channel " << c;
  }
}

// Double-bit errors under the subsystem: the same window written, then two stored bits of one
// codeword (data or check bits) flip in every fourth burst, and every burst is read back once:
// each such read reaches the requester as an error (rsp_err_o), the others return the written
// data, and each pseudo-channel's cnt_ecc_fatal_o counts its own (cnt_ecc_corrected_o none).
// Before this test only pseudo-channels 0 and 2 of the subsystem had ever reported a double-bit
// error (make coverage, 2026-12-07).
TEST_F(HbmSystem, DoubleBitErrorsAreReportedInEveryPseudoChannel) {
  uint32_t window = 0;
  ASSERT_NO_THROW(window = write_window());
  std::vector<uint64_t> doubles(h_->channels(), 0);
  const uint64_t stored = for_each_stored([&](unsigned c, unsigned b, unsigned row, unsigned col, uint64_t i) {
    if (i % 4 != 0) return;
    // Codeword w is stored bits [72 w, 72 w + 72) (64 data bits and 8 check bits, tp_hbm_ctrl).
    const unsigned word = static_cast<unsigned>(rng_() % 4), first = static_cast<unsigned>(rng_() % 72);
    const unsigned second = (first + 1 + static_cast<unsigned>(rng_() % 71)) % 72;  // another bit
    h_->device(c).flip_stored_bit(b, row, col, 72 * word + first);
    h_->device(c).flip_stored_bit(b, row, col, 72 * word + second);
    ++doubles[c];
  });
  ASSERT_EQ(stored, window) << "every written burst found once in the devices";
  uint64_t total = 0;
  for (unsigned c = 0; c < h_->channels(); ++c) {
    EXPECT_GT(doubles[c], 0u) << "pseudo-channel " << c << " holds no double-bit error";
    total += doubles[c];
  }
  for (uint32_t a = 0; a < window; ++a) h_->queue({false, a, a % 16, {}, 0, 0});
  ASSERT_NO_THROW(h_->run(0.2, 0.3));
  for (const auto& e : h_->errors()) ADD_FAILURE() << e;
  EXPECT_EQ(h_->mismatches(), 0u) << "a clean read returned other data";
  EXPECT_EQ(h_->reads_checked(), window);
  EXPECT_EQ(h_->fatal(), total) << "each double-bit error reaches the requester";
  for (unsigned c = 0; c < h_->channels(); ++c) {
    EXPECT_EQ(h_->top().cnt_ecc_fatal_o[c], doubles[c]) << "pseudo-channel " << c;
    EXPECT_EQ(h_->top().cnt_ecc_corrected_o[c], 0u) << "pseudo-channel " << c;
  }
}

}  // namespace
