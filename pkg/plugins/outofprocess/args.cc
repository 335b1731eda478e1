#include "pkg/plugins/outofprocess/args.h"

#include <algorithm>
#include <set>
#include <string>

#include "pkg/framework/args.h"
#include "pkg/util/base64.h"
#include "pkg/util/time.h"

namespace berth::plugins::outofprocess {
namespace {

using json = nlohmann::json;
using framework::ArgsErrors;
using framework::ChildField;
using framework::IndexField;

// A DNS label: it names the endpoint in metric labels and messages, where anything else would
// need quoting.
bool IsDnsLabel(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-';
}

std::optional<Point> PointNamed(std::string_view name) {
  for (size_t i = 0; i < kPoints; i++) {
    if (kPointNames[i] == name) return static_cast<Point>(i);
  }
  return std::nullopt;
}

std::vector<std::string_view> PointNameList() {
  return std::vector<std::string_view>(kPointNames.begin(), kPointNames.end());
}

// A Go duration in [min, max]; records an error and returns nullopt otherwise.
std::optional<std::chrono::milliseconds> ReadDuration(const json& value, const std::string& field,
                                                      std::chrono::milliseconds min,
                                                      std::chrono::milliseconds max,
                                                      ArgsErrors& errors) {
  if (!value.is_string()) {
    errors.Invalid(field, value, "must be a duration such as \"5s\" or \"500ms\"");
    return std::nullopt;
  }
  const auto parsed = util::ParseGoDuration(value.get<std::string>());
  if (!parsed) {
    errors.Invalid(field, value, "must be a duration such as \"5s\" or \"500ms\"");
    return std::nullopt;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
  if (ms < min || ms > max) {
    errors.Invalid(
        field, value,
        "must be between " + util::FormatGoDuration(min) + " and " + util::FormatGoDuration(max));
    return std::nullopt;
  }
  return ms;
}

bool ReadString(const json& object, std::string_view key, const std::string& parent,
                ArgsErrors& errors, std::string* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_string()) {
    errors.Invalid(ChildField(parent, key), *it, "must be a string");
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

bool ReadBool(const json& object, std::string_view key, const std::string& parent,
              ArgsErrors& errors, bool* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) {
    errors.Invalid(ChildField(parent, key), *it, "must be true or false");
    return false;
  }
  *out = it->get<bool>();
  return true;
}

// `fileKey` and `dataKey` of tlsConfig: a path, or base64 of the PEM text.
void ReadPem(const json& tls, std::string_view file_key, std::string_view data_key,
             const std::string& parent, ArgsErrors& errors, std::string* file, std::string* pem) {
  const bool has_file = ReadString(tls, file_key, parent, errors, file) && !file->empty();
  std::string data;
  const bool has_data = ReadString(tls, data_key, parent, errors, &data) && !data.empty();
  if (has_data) {
    std::optional<std::string> decoded = util::Base64Decode(data);
    if (!decoded) {
      errors.Add(ChildField(parent, data_key), "Invalid value: must be base64 of PEM text");
    } else {
      *pem = std::move(*decoded);
    }
  }
  if (has_file && has_data) {
    errors.Forbidden(ChildField(parent, data_key),
                     std::string(file_key) + " and " + std::string(data_key) + " are exclusive");
  }
}

void ReadTls(const json& tls, const std::string& field, ArgsErrors& errors, TlsArgs* out) {
  if (!errors.CheckObject(tls,
                          {"insecure", "serverName", "caFile", "caData", "certFile", "certData",
                           "keyFile", "keyData"},
                          field)) {
    return;
  }
  ReadBool(tls, "insecure", field, errors, &out->insecure);
  ReadString(tls, "serverName", field, errors, &out->server_name);
  ReadPem(tls, "caFile", "caData", field, errors, &out->ca_file, &out->ca_pem);
  ReadPem(tls, "certFile", "certData", field, errors, &out->cert_file, &out->cert_pem);
  ReadPem(tls, "keyFile", "keyData", field, errors, &out->key_file, &out->key_pem);
  const bool has_cert = !out->cert_file.empty() || !out->cert_pem.empty();
  const bool has_key = !out->key_file.empty() || !out->key_pem.empty();
  if (has_cert != has_key) {
    errors.Required(ChildField(field, has_cert ? "keyData" : "certData"),
                    "a client certificate needs its key, and a key its certificate");
  }
}

void ReadPermit(const json& permit, const std::string& field, ArgsErrors& errors, PermitArgs* out) {
  if (!errors.CheckObject(permit, {"maxWait", "pollInterval"}, field)) return;
  if (auto it = permit.find("maxWait"); it != permit.end() && !it->is_null()) {
    if (auto d = ReadDuration(*it, ChildField(field, "maxWait"), std::chrono::milliseconds(1),
                              kMaxMaxWait, errors)) {
      out->max_wait = *d;
    }
  }
  if (auto it = permit.find("pollInterval"); it != permit.end() && !it->is_null()) {
    if (auto d = ReadDuration(*it, ChildField(field, "pollInterval"), kMinPollInterval, kMaxMaxWait,
                              errors)) {
      out->poll_interval = *d;
    }
  }
}

void ReadEndpoint(const json& endpoint, const std::string& field, ArgsErrors& errors,
                  EndpointArgs* out) {
  if (!errors.CheckObject(endpoint,
                          {"name", "url", "extensionPoints", "timeout", "timeouts", "permit", "tls",
                           "ignorable", "scoreWeight"},
                          field)) {
    return;
  }
  if (!ReadString(endpoint, "name", field, errors, &out->name)) {
    errors.Required(ChildField(field, "name"), "every endpoint needs a name");
  } else if (!IsDnsLabel(out->name)) {
    errors.Invalid(ChildField(field, "name"), out->name,
                   "must be a DNS label: lower-case letters, digits and '-', at most 63");
  }
  bool https = false;
  if (!ReadString(endpoint, "url", field, errors, &out->url)) {
    errors.Required(ChildField(field, "url"), "the endpoint's http:// or https:// URL");
  } else if (out->url.starts_with("https://")) {
    https = true;
  } else if (!out->url.starts_with("http://")) {
    errors.Invalid(ChildField(field, "url"), out->url, "must start with http:// or https://");
  }

  const std::string points_field = ChildField(field, "extensionPoints");
  auto points = endpoint.find("extensionPoints");
  if (points == endpoint.end() || points->is_null() || (points->is_array() && points->empty())) {
    errors.Required(points_field, "the extension points this endpoint serves");
  } else if (!points->is_array()) {
    errors.Invalid(points_field, *points, "must be a list of extension point names");
  } else {
    for (size_t i = 0; i < points->size(); i++) {
      const json& name = (*points)[i];
      const std::optional<Point> point =
          name.is_string() ? PointNamed(name.get<std::string>()) : std::nullopt;
      if (!point) {
        errors.NotSupported(IndexField(points_field, i), name, PointNameList());
      } else if (out->points[static_cast<size_t>(*point)]) {
        errors.Duplicate(IndexField(points_field, i), name);
      } else {
        out->points[static_cast<size_t>(*point)] = true;
      }
    }
  }

  std::chrono::milliseconds timeout = kDefaultTimeout;
  if (auto it = endpoint.find("timeout"); it != endpoint.end() && !it->is_null()) {
    if (auto d = ReadDuration(*it, ChildField(field, "timeout"), std::chrono::milliseconds(1),
                              kMaxTimeout, errors)) {
      timeout = *d;
    }
  }
  out->timeouts.fill(timeout);
  if (auto it = endpoint.find("timeouts"); it != endpoint.end() && !it->is_null()) {
    const std::string timeouts_field = ChildField(field, "timeouts");
    if (!it->is_object()) {
      errors.Invalid(timeouts_field, *it, "must map extension point names to durations");
    } else {
      for (const auto& [name, value] : it->items()) {
        const std::optional<Point> point = PointNamed(name);
        const std::string entry = ChildField(timeouts_field, name);
        if (!point) {
          errors.NotSupported(entry, name, PointNameList());
        } else if (!out->Serves(*point)) {
          errors.Invalid(entry, value, "the endpoint does not serve " + name);
        } else if (auto d = ReadDuration(value, entry, std::chrono::milliseconds(1), kMaxTimeout,
                                         errors)) {
          out->timeouts[static_cast<size_t>(*point)] = *d;
        }
      }
    }
  }

  if (auto it = endpoint.find("permit"); it != endpoint.end() && !it->is_null()) {
    ReadPermit(*it, ChildField(field, "permit"), errors, &out->permit);
    if (!out->Serves(Point::kPermit)) {
      errors.Forbidden(ChildField(field, "permit"), "the endpoint does not serve Permit");
    }
  }
  if (auto it = endpoint.find("tls"); it != endpoint.end() && !it->is_null()) {
    ReadTls(*it, ChildField(field, "tls"), errors, &out->tls);
    if (!https && !out->url.empty()) {
      errors.Forbidden(ChildField(field, "tls"), "applies to https:// URLs only");
    }
  }
  ReadBool(endpoint, "ignorable", field, errors, &out->ignorable);
  errors.ReadInt(endpoint, "scoreWeight", field, 1, 100, "not in valid range [1, 100]",
                 &out->score_weight);
}

}  // namespace

Args ParseArgs(const json& args) {
  Args out;
  ArgsErrors errors;
  if (errors.CheckObject(args, {"endpoints"})) {
    auto endpoints = args.find("endpoints");
    if (endpoints != args.end() && !endpoints->is_null()) {
      if (!endpoints->is_array()) {
        errors.Invalid("endpoints", *endpoints, "must be a list of endpoints");
      } else {
        std::set<std::string> names;
        for (size_t i = 0; i < endpoints->size(); i++) {
          EndpointArgs endpoint;
          const std::string field = IndexField("endpoints", i);
          ReadEndpoint((*endpoints)[i], field, errors, &endpoint);
          if (!endpoint.name.empty() && !names.insert(endpoint.name).second) {
            errors.Duplicate(ChildField(field, "name"), endpoint.name);
          }
          out.endpoints.push_back(std::move(endpoint));
        }
      }
    }
  }
  errors.ThrowIfAny();
  return out;
}

}  // namespace berth::plugins::outofprocess
