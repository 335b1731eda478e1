#include "pkg/config/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pkg/yaml/yaml.h"

namespace berth::config {
namespace {

// Throws YAML::ParserException where a document of `text` fails to move the parser forward.
// yaml-cpp's LoadAll loops forever, allocating a null document per turn, on some malformed streams
// ("{[{}]},"): its parser then reports document after document at the same token. Walking the
// documents first, without building them, finds that before LoadAll runs. With Aliases::kRefuse,
// the same walk throws at the first alias.
void CheckDocumentsAdvance(const std::string& text, Aliases aliases) {
  class DocumentStarts final : public YAML::EventHandler {
   public:
    void OnDocumentStart(const YAML::Mark& mark) override { last = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
      if (refuse_aliases) {
        throw YAML::ParserException(
            mark,
            "YAML aliases (*name) are not accepted here; write the anchored value out in full");
      }
    }
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}

    YAML::Mark last = YAML::Mark::null_mark();
    bool refuse_aliases = false;
  };

  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  starts.refuse_aliases = aliases == Aliases::kRefuse;
  std::optional<int> previous;
  while (parser.HandleNextDocument(starts)) {
    if (previous == starts.last.pos) {
      throw YAML::ParserException(starts.last, "expected the start of a document");
    }
    previous = starts.last.pos;
  }
}

}  // namespace

std::vector<YAML::Node> LoadDocuments(const std::string& text, const std::string& source_name,
                                      Aliases aliases) {
  std::vector<YAML::Node> documents;
  try {
    CheckDocumentsAdvance(text, aliases);
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = "line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": ";
    }
    throw ConfigError(source_name, {{"", where + e.msg}});
  }
  std::erase_if(documents, [](const YAML::Node& doc) { return doc.IsNull(); });
  return documents;
}

std::vector<nlohmann::json> YamlDocumentsToJson(const std::string& text,
                                                const std::string& source_name, size_t max_values,
                                                Aliases aliases) {
  const std::vector<YAML::Node> documents = LoadDocuments(text, source_name, aliases);
  std::vector<nlohmann::json> out;
  // The first problem is reported.
  std::string error;
  std::string error_path;
  yaml::JsonBudget budget(max_values);
  yaml::JsonConverter converter(&budget, "more than the allowed number of values",
                                [&](const std::string& at, const std::string& problem) {
                                  if (!error.empty()) return;
                                  error = problem;
                                  error_path = at;
                                });
  for (size_t i = 0; i < documents.size(); i++) {
    nlohmann::json doc = converter.Convert(documents[i], "");
    if (!error.empty()) {
      std::string where = documents.size() > 1 ? "document " + std::to_string(i + 1) : "";
      if (!error_path.empty()) where += (where.empty() ? "" : ": ") + error_path;
      throw ConfigError(source_name, {{where, error}});
    }
    out.push_back(std::move(doc));
  }
  return out;
}

}  // namespace berth::config
