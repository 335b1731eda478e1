#ifndef BERTH_PKG_SCHEDULER_CYCLE_GATE_H_
#define BERTH_PKG_SCHEDULER_CYCLE_GATE_H_

// Lets other threads use what the scheduling cycle owns (the snapshot, the worker pool, the
// profiles' cycle-time plugin calls) between two cycles, for dry runs (explain, simulate).
//
// Invariant: at most one holder at a time, the scheduling thread or one side task. Turns
// alternate: a side task that asked while a cycle ran goes before the next cycle, and a cycle
// waiting for a side task goes before any other side task. So the scheduling thread waits for
// at most one side task's turn before each cycle, and a side task for at most one cycle; a side
// task that needs several turns (a dry run per hint) gives the gate back between them.
//
// The scheduling thread pays a lock and an unlock of an uncontended mutex per cycle when nobody
// else is waiting.

#include <condition_variable>
#include <mutex>

namespace berth::scheduler {

class CycleGate {
 public:
  // Held by the scheduling thread for one cycle.
  class CycleTurn {
   public:
    explicit CycleTurn(CycleGate& gate) : gate_(gate) { gate_.EnterCycle(); }
    ~CycleTurn() { gate_.Exit(); }
    CycleTurn(const CycleTurn&) = delete;
    CycleTurn& operator=(const CycleTurn&) = delete;

   private:
    CycleGate& gate_;
  };

  // Held by a side task for one turn.
  class SideTurn {
   public:
    explicit SideTurn(CycleGate& gate) : gate_(gate) { gate_.EnterSide(); }
    ~SideTurn() { gate_.Exit(); }
    SideTurn(const SideTurn&) = delete;
    SideTurn& operator=(const SideTurn&) = delete;

   private:
    CycleGate& gate_;
  };

 private:
  void EnterCycle() {
    std::unique_lock lock(mu_);
    if (busy_ || side_turn_) {
      cycle_waiting_ = true;
      cv_.wait(lock, [&] { return !busy_ && !side_turn_; });
      cycle_waiting_ = false;
    }
    busy_ = true;
  }
  void EnterSide() {
    std::unique_lock lock(mu_);
    side_waiting_++;
    cv_.wait(lock, [&] { return !busy_ && (!cycle_waiting_ || side_turn_); });
    side_waiting_--;
    side_turn_ = false;
    busy_ = true;
  }
  void Exit() {
    std::lock_guard lock(mu_);
    busy_ = false;
    // After a cycle, a waiting side task goes first; after a side task, a waiting cycle does
    // (EnterSide waits while cycle_waiting_ and no side turn is due).
    if (side_waiting_ > 0 && !cycle_waiting_) side_turn_ = true;
    if (side_waiting_ > 0 || cycle_waiting_) cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  // All guarded by mu_.
  bool busy_ = false;
  bool cycle_waiting_ = false;
  // A side task was waiting when a cycle ended: the next turn is a side task's.
  bool side_turn_ = false;
  int side_waiting_ = 0;
};

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_CYCLE_GATE_H_
