#include <string>
#include <string_view>

#include "pkg/plugins/dynamicresources/allocation_run.h"

namespace berth::plugins::dynamicresources {
namespace {

bool SameAttributeValue(const api::DeviceAttribute& a, const api::DeviceAttribute& b) {
  if (&a == &b) {
    return true;
  }
  if (a.kind != b.kind) {
    return false;
  }
  switch (a.kind) {
    case api::DeviceAttribute::Kind::kInt:
      return a.int_value == b.int_value;
    case api::DeviceAttribute::Kind::kBool:
      return a.bool_value == b.bool_value;
    case api::DeviceAttribute::Kind::kString:
    case api::DeviceAttribute::Kind::kVersion:
      // Semantic versions are stored in their minimal form, so text equality is version
      // equality.
      return a.string_value == b.string_value;
  }
  return false;
}

}  // namespace

bool Constraint::Add(const std::string& request, const std::string& sub_request,
                     const api::Device& device, const DeviceId& id, size_t index) {
  if (!AppliesTo(request, sub_request)) {
    return true;
  }
  const api::DeviceAttribute* attribute = column_ != nullptr && index < column_->size()
                                              ? (*column_)[index]
                                              : FindDeviceAttribute(device, id.driver, attribute_);
  if (attribute == nullptr) {
    return false;
  }
  if (distinct_) {
    for (const api::DeviceAttribute* seen : values_) {
      if (SameAttributeValue(*seen, *attribute)) {
        return false;
      }
    }
  } else if (!values_.empty() && !SameAttributeValue(*values_.front(), *attribute)) {
    return false;
  }
  values_.push_back(attribute);
  return true;
}

void Constraint::Remove(const std::string& request, const std::string& sub_request) {
  if (AppliesTo(request, sub_request)) {
    values_.pop_back();
  }
}

bool Constraint::AppliesTo(const std::string& request, const std::string& sub_request) const {
  if (requests_.empty()) {
    return true;
  }
  if (requests_.count(request) != 0) {
    return true;
  }
  return !sub_request.empty() && requests_.count(request + "/" + sub_request) != 0;
}

}  // namespace berth::plugins::dynamicresources
