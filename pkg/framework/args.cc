#include "pkg/framework/args.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace berth::framework {
namespace {

std::string Aggregate(const std::vector<ArgsFieldError>& errors) {
  if (errors.size() == 1) return errors.front().ToString();
  std::string joined = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) joined += ", ";
    joined += errors[i].ToString();
  }
  joined += "]";
  return joined;
}

// A value as an error shows it: JSON text, so strings are quoted and numbers written plainly.
std::string ValueText(const nlohmann::json& value) { return value.dump(); }

}  // namespace

std::string ArgsFieldError::ToString() const {
  return (field.empty() ? std::string("args") : field) + ": " + detail;
}

InvalidArgs::InvalidArgs(std::vector<ArgsFieldError> errors)
    : std::invalid_argument(Aggregate(errors)), errors_(std::move(errors)) {}

std::string ChildField(std::string_view parent, std::string_view child) {
  std::string field(parent);
  if (!field.empty()) field += '.';
  field += child;
  return field;
}

std::string IndexField(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

void ArgsErrors::Invalid(const std::string& field, const nlohmann::json& value,
                         std::string_view detail) {
  Add(field, "Invalid value: " + ValueText(value) + ": " + std::string(detail));
}

void ArgsErrors::Required(const std::string& field, std::string_view detail) {
  Add(field, "Required value: " + std::string(detail));
}

void ArgsErrors::NotSupported(const std::string& field, const nlohmann::json& value,
                              const std::vector<std::string_view>& supported) {
  std::string detail = "Unsupported value: " + ValueText(value) + ": supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += ", ";
    detail += ValueText(std::string(supported[i]));
  }
  Add(field, std::move(detail));
}

void ArgsErrors::Duplicate(const std::string& field, const nlohmann::json& value) {
  Add(field, "Duplicate value: " + ValueText(value));
}

void ArgsErrors::Forbidden(const std::string& field, std::string_view detail) {
  Add(field, "Forbidden: " + std::string(detail));
}

void ArgsErrors::UnknownField(const std::string& field) { Add(field, "unknown field"); }

void ArgsErrors::Add(std::string field, std::string detail) {
  errors_.push_back({std::move(field), std::move(detail)});
}

void ArgsErrors::Add(const api::DecodeError& error) {
  // DecodeError's what() is "<field>: <problem>".
  std::string_view what = error.what();
  const size_t prefix = error.field().size() + 2;
  Add(error.field(), std::string(what.size() >= prefix ? what.substr(prefix) : what));
}

bool ArgsErrors::CheckObject(const nlohmann::json& value,
                             const std::vector<std::string_view>& known, const std::string& field) {
  if (value.is_null()) return false;
  if (!value.is_object()) {
    Invalid(field, value, "must be an object");
    return false;
  }
  for (const auto& [key, member] : value.items()) {
    if (field.empty() && (key == "apiVersion" || key == "kind")) continue;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      UnknownField(ChildField(field, key));
    }
  }
  return true;
}

bool ArgsErrors::ReadInt(const nlohmann::json& object, std::string_view key,
                         const std::string& parent, int64_t min, int64_t max,
                         std::string_view out_of_range, int64_t* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  const std::string field = ChildField(parent, key);
  if (!it->is_number_integer()) {
    Invalid(field, *it, "must be an integer");
    return false;
  }
  // An unsigned value past int64 would wrap if read as int64.
  const bool past_int64 =
      it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t value = past_int64 ? INT64_MAX : it->get<int64_t>();
  if (past_int64 || value < min || value > max) {
    Invalid(field, *it, out_of_range);
    return false;
  }
  *out = value;
  return true;
}

void ArgsErrors::ThrowIfAny() const {
  if (!errors_.empty()) throw InvalidArgs(errors_);
}

void ExpectNoArgs(const nlohmann::json& args) {
  ArgsErrors errors;
  errors.CheckObject(args, {});
  errors.ThrowIfAny();
}

}  // namespace berth::framework
