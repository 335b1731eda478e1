#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_MALFORMED_OBJECTS_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_MALFORMED_OBJECTS_H_

// The ResourceClaims, DeviceClasses and ResourceSlices the apiserver serves but the informers
// skipped because their decoders rejected them, with the decoder's error (which names the field),
// so that a pod held up by one is told which object and field instead of "does not exist" or a
// bare "cannot allocate all claims".
//
// Invariant: an object's record lives from its rejected version until the informer stores a good
// version of it or reports its delete. At most kMaxRecords records are kept per kind; beyond that
// the oldest is forgotten (a flood of malformed objects cannot grow the scheduler without limit).
//
// Thread-safe: the informers' threads record and clear, the scheduling thread and Filter's
// workers read. Filter pays one atomic load per rejected node while no slice is malformed.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace berth::informer {
class SharedInformerFactory;
}

namespace berth::plugins::dynamicresources {

class MalformedObjects {
 public:
  // The records of the scheduler that owns `informers` (made on first use, which sets the
  // decode-error handlers of its ResourceClaim, DeviceClass and ResourceSlice informers).
  static std::shared_ptr<MalformedObjects> For(informer::SharedInformerFactory& informers);

  MalformedObjects() = default;
  MalformedObjects(const MalformedObjects&) = delete;
  MalformedObjects& operator=(const MalformedObjects&) = delete;

  enum class Kind { kClaim, kClass, kSlice };
  // The most records kept per kind.
  static constexpr size_t kMaxRecords = 1024;

  // Records why the object `key` ("namespace/name" for a claim, the name otherwise) was rejected.
  // `node` is a slice's spec.nodeName as published, empty when it names none.
  void Record(Kind kind, const std::string& key, std::string error, std::string node = "");
  // Forgets the object's record (a good version or its delete arrived).
  void Clear(Kind kind, const std::string& key);

  // The decoder's error for the object; empty when it has no record.
  std::string Error(Kind kind, const std::string& key) const;

  // "; ResourceSlice NAME cannot be read: ERROR" for each malformed slice published for `node` or
  // for no node in particular (the first few of them by name, then how many more); empty when
  // there is none, without taking the lock while no slice at all is malformed.
  std::string SliceNotes(const std::string& node) const;

 private:
  struct Entry {
    std::string error;
    std::string node;
    uint64_t sequence = 0;
  };
  struct Records {
    std::map<std::string, Entry> by_key;
    // Keys by when they were recorded, oldest first.
    std::map<uint64_t, std::string> order;
  };
  Records& Of(Kind kind) { return records_[static_cast<int>(kind)]; }
  const Records& Of(Kind kind) const { return records_[static_cast<int>(kind)]; }
  std::atomic<size_t>& CountOf(Kind kind) { return counts_[static_cast<int>(kind)]; }

  mutable std::mutex mu_;
  // Guarded by mu_.
  Records records_[3];
  uint64_t next_sequence_ = 0;
  // The number of records per kind, written under mu_, read without it.
  std::atomic<size_t> counts_[3]{};
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_MALFORMED_OBJECTS_H_
