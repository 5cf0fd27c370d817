#include "hbm_device.h"

#include <fmt/format.h>

#include <algorithm>

namespace tp::golden {

HbmViolation::HbmViolation(const std::string& rule, unsigned bank, uint64_t cycle, const std::string& detail)
    : std::runtime_error(fmt::format("HBM timing violation: {} on bank {} at cycle {}: {}", rule, bank, cycle, detail)),
      rule_(rule),
      bank_(bank),
      cycle_(cycle) {}

HbmDevice::HbmDevice(HbmGeometry g, HbmTiming t)
    : g_(g),
      t_(t),
      banks_(g.banks()),
      group_act_(g.bank_groups, kNever),
      group_col_(g.bank_groups, kNever),
      group_wr_end_(g.bank_groups, kNever) {
  if (g.banks() == 0 || g.rows == 0 || g.columns == 0 || g.burst_bytes == 0 || g.burst_bytes > 64)
    throw std::invalid_argument("HbmDevice: empty geometry or a burst over 64 bytes");
  if (t.trefi == 0 || t.burst_cycles == 0) throw std::invalid_argument("HbmDevice: tREFI and the burst must be > 0");
}

void HbmDevice::fail(const std::string& rule, unsigned bank, uint64_t cycle, const std::string& detail) const {
  throw HbmViolation(rule, bank, cycle, detail);
}

// `cycle` must be at least `gap` cycles after `since` (unless `since` never happened).
void HbmDevice::need(bool applies, const char* rule, unsigned bank, uint64_t cycle, uint64_t since,
                     unsigned gap) const {
  if (!applies || since == kNever || cycle >= since + gap) return;
  fail(rule, bank, cycle,
       fmt::format("{} cycles after the previous command at {}, {} required", cycle - since, since, gap));
}

void HbmDevice::advance(uint64_t cycle) {
  if (cycle < now_) fail("order", 0, cycle, fmt::format("command earlier than the previous one at {}", now_));
  now_ = cycle;
  check_refresh(cycle);
}

void HbmDevice::check_bank(unsigned bank, uint64_t cycle) const {
  if (bank >= banks_.size()) fail("address", bank, cycle, fmt::format("bank out of range (banks: {})", banks_.size()));
}

void HbmDevice::check_refresh(uint64_t cycle) const {
  const uint64_t due = cycle / t_.trefi;
  for (unsigned bank = 0; bank < banks_.size(); ++bank) {
    const uint64_t done = refreshes + banks_[bank].refreshed;
    if (due > done + t_.max_postponed)
      fail("tREFI", bank, cycle,
           fmt::format("{} refreshes due by now, {} done: more than {} postponed", due, done, t_.max_postponed));
  }
}

void HbmDevice::activate(uint64_t cycle, unsigned bank, unsigned row) {
  check_bank(bank, cycle);
  advance(cycle);
  Bank& b = banks_[bank];
  if (b.open) fail("ACT to an open bank", bank, cycle, fmt::format("row {} is open", b.row));
  if (row >= g_.rows) fail("address", bank, cycle, fmt::format("row {} out of range ({} rows)", row, g_.rows));
  need(true, "tRP", bank, cycle, b.pre, t_.trp);
  need(true, "tRC", bank, cycle, b.act, t_.trc);
  need(true, "tRRD_S", bank, cycle, last_act_, t_.trrd_s);
  need(true, "tRRD_L", bank, cycle, group_act_[group(bank)], t_.trrd_l);
  if (faw_.size() == 4) need(true, "tFAW", bank, cycle, faw_.front(), t_.tfaw);
  need(true, "tRFC", bank, cycle, ref_, t_.trfc);
  need(true, "tRFCSB", bank, cycle, b.ref, t_.trfcsb);
  need(true, "tRREFD", bank, cycle, refsb_, t_.trrefd);
  b.open = true;
  b.row = row;
  b.act = cycle;
  last_act_ = cycle;
  group_act_[group(bank)] = cycle;
  faw_.push_back(cycle);
  if (faw_.size() > 4) faw_.pop_front();
  ++activates;
}

void HbmDevice::precharge(uint64_t cycle, unsigned bank) {
  check_bank(bank, cycle);
  advance(cycle);
  Bank& b = banks_[bank];
  if (!b.open) return;  // precharging an idle bank is a no-op
  need(true, "tRAS", bank, cycle, b.act, t_.tras);
  need(true, "tRTP", bank, cycle, b.rd, t_.trtp);
  need(true, "tWR", bank, cycle, b.wr_end, t_.twr);
  b.open = false;
  b.pre = cycle;
  ++precharges;
}

void HbmDevice::precharge_all(uint64_t cycle) {
  for (unsigned bank = 0; bank < banks_.size(); ++bank) precharge(cycle, bank);
}

std::vector<uint8_t> HbmDevice::read(uint64_t cycle, unsigned bank, unsigned column) {
  check_bank(bank, cycle);
  advance(cycle);
  Bank& b = banks_[bank];
  if (!b.open) fail("RD to a closed bank", bank, cycle, "no row is open");
  if (column >= g_.columns) fail("address", bank, cycle, fmt::format("column {} out of range", column));
  const unsigned grp = group(bank);
  need(true, "tRCD", bank, cycle, b.act, t_.trcd);
  need(true, "tCCD_S", bank, cycle, last_col_, t_.tccd_s);
  need(true, "tCCD_L", bank, cycle, group_col_[grp], t_.tccd_l);
  need(true, "tWTR_S", bank, cycle, wr_end_, t_.twtr_s);
  need(true, "tWTR_L", bank, cycle, group_wr_end_[grp], t_.twtr_l);
  need(true, "tRFC", bank, cycle, ref_, t_.trfc);
  const uint64_t start = cycle + t_.cl;
  const uint64_t earliest = bus_end_ + (bus_read_ ? 0 : 1);  // one idle cycle to turn the bus round
  if (start < earliest)
    fail("data bus", bank, cycle, fmt::format("read data at {} overlaps the bus until {}", start, earliest));
  bus_end_ = start + t_.burst_cycles;
  bus_read_ = true;
  b.rd = cycle;
  last_col_ = group_col_[grp] = cycle;
  ++reads;
  std::vector<uint8_t> out(g_.burst_bytes, 0);
  if (auto it = store_.find(key(bank, b.row)); it != store_.end())
    std::copy_n(it->second.begin() + std::size_t{column} * g_.burst_bytes, g_.burst_bytes, out.begin());
  return out;
}

void HbmDevice::write(uint64_t cycle, unsigned bank, unsigned column, const std::vector<uint8_t>& data,
                      uint64_t byte_mask) {
  check_bank(bank, cycle);
  advance(cycle);
  Bank& b = banks_[bank];
  if (!b.open) fail("WR to a closed bank", bank, cycle, "no row is open");
  if (column >= g_.columns) fail("address", bank, cycle, fmt::format("column {} out of range", column));
  if (data.size() != g_.burst_bytes)
    fail("burst size", bank, cycle, fmt::format("{} bytes written, a burst is {}", data.size(), g_.burst_bytes));
  const unsigned grp = group(bank);
  need(true, "tRCD", bank, cycle, b.act, t_.trcd);
  need(true, "tCCD_S", bank, cycle, last_col_, t_.tccd_s);
  need(true, "tCCD_L", bank, cycle, group_col_[grp], t_.tccd_l);
  need(true, "tRFC", bank, cycle, ref_, t_.trfc);
  const uint64_t start = cycle + t_.cwl;
  const uint64_t earliest = bus_end_ + (bus_read_ ? 1 : 0);
  if (start < earliest)
    fail("data bus", bank, cycle, fmt::format("write data at {} overlaps the bus until {}", start, earliest));
  bus_end_ = start + t_.burst_cycles;
  bus_read_ = false;
  b.wr_end = wr_end_ = group_wr_end_[grp] = bus_end_;
  last_col_ = group_col_[grp] = cycle;
  ++writes;
  auto& row = row_data(bank, b.row);
  for (unsigned i = 0; i < g_.burst_bytes; ++i)
    if ((byte_mask >> i) & 1u) row[std::size_t{column} * g_.burst_bytes + i] = data[i];
}

void HbmDevice::refresh(uint64_t cycle) {
  advance(cycle);
  for (unsigned bank = 0; bank < banks_.size(); ++bank) {
    if (banks_[bank].open) fail("REF with an open bank", bank, cycle, fmt::format("row {} is open", banks_[bank].row));
    need(true, "tRP", bank, cycle, banks_[bank].pre, t_.trp);
  }
  need(true, "tRFC", 0, cycle, ref_, t_.trfc);
  for (unsigned bank = 0; bank < banks_.size(); ++bank) need(true, "tRFCSB", bank, cycle, banks_[bank].ref, t_.trfcsb);
  ref_ = cycle;
  ++refreshes;
}

void HbmDevice::refresh_bank(uint64_t cycle, unsigned bank) {
  check_bank(bank, cycle);
  advance(cycle);
  Bank& b = banks_[bank];
  if (b.open) fail("REFSB to an open bank", bank, cycle, fmt::format("row {} is open", b.row));
  need(true, "tRP", bank, cycle, b.pre, t_.trp);
  need(true, "tRC", bank, cycle, b.act, t_.trc);
  need(true, "tRFC", bank, cycle, ref_, t_.trfc);
  need(true, "tRFCSB", bank, cycle, b.ref, t_.trfcsb);
  need(true, "tRREFD", bank, cycle, refsb_, t_.trrefd);
  need(true, "tRRD_S", bank, cycle, last_act_, t_.trrd_s);  // an activate, then a refresh elsewhere
  need(true, "tRRD_L", bank, cycle, group_act_[group(bank)], t_.trrd_l);
  b.ref = refsb_ = cycle;
  ++b.refreshed;
  ++bank_refreshes;
}

void HbmDevice::flip_stored_bit(unsigned bank, unsigned row, unsigned column, unsigned bit) {
  if (bank >= banks_.size() || row >= g_.rows || column >= g_.columns || bit >= g_.burst_bytes * 8)
    throw std::out_of_range("HbmDevice::flip_stored_bit: position out of range");
  row_data(bank, row)[std::size_t{column} * g_.burst_bytes + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
}

std::vector<uint8_t> HbmDevice::peek(unsigned bank, unsigned row, unsigned column) const {
  if (bank >= banks_.size() || row >= g_.rows || column >= g_.columns)
    throw std::out_of_range("HbmDevice::peek: position out of range");
  const auto it = store_.find(key(bank, row));
  if (it == store_.end()) return std::vector<uint8_t>(g_.burst_bytes, 0);
  const auto first = it->second.begin() + std::ptrdiff_t{column} * g_.burst_bytes;
  return {first, first + g_.burst_bytes};
}

void HbmDevice::poke(unsigned bank, unsigned row, unsigned column, const std::vector<uint8_t>& data) {
  if (bank >= banks_.size() || row >= g_.rows || column >= g_.columns || data.size() != g_.burst_bytes)
    throw std::out_of_range("HbmDevice::poke: position out of range or wrong burst size");
  std::copy(data.begin(), data.end(), row_data(bank, row).begin() + std::ptrdiff_t{column} * g_.burst_bytes);
}

std::vector<uint8_t>& HbmDevice::row_data(unsigned bank, unsigned row) {
  auto& r = store_[key(bank, row)];
  if (r.empty()) r.assign(std::size_t{g_.columns} * g_.burst_bytes, 0);
  return r;
}

}  // namespace tp::golden
