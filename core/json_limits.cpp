#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace sdw {

namespace {

std::string sizeText(std::size_t bytes) {
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

// Thrown from the parser callback to stop at the first level too deep.
struct TooDeep {
    std::size_t depth;
};

}  // namespace

nlohmann::json parseJsonBounded(std::string_view text, const std::string& source, const JsonLimits& limits) {
    using json = nlohmann::json;
    if (text.size() > limits.maxBytes)
        throw JsonInputError(JsonInputError::Reason::TooLarge, source + ": " + std::to_string(text.size()) +
                                                                   " bytes of JSON is over the " +
                                                                   sizeText(limits.maxBytes) + " limit");
    // The callback sees each container as it opens, with the number of
    // containers around it; the value is never built deeper than the limit.
    const auto maxDepth = static_cast<int>(std::min<std::size_t>(limits.maxDepth, 1u << 20));
    const json::parser_callback_t depthCheck = [maxDepth](int depth, json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
            depth >= maxDepth)
            throw TooDeep{static_cast<std::size_t>(depth) + 1};
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), depthCheck);
    } catch (const TooDeep&) {
        throw JsonInputError(JsonInputError::Reason::TooDeep,
                             source + ": JSON nested deeper than " + std::to_string(limits.maxDepth) + " levels");
    } catch (const json::exception& e) {
        throw JsonInputError(JsonInputError::Reason::NotJson, source + ": not valid JSON: " + e.what());
    }
}

std::string readFileBounded(const std::filesystem::path& file, std::size_t maxBytes) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec) throw JsonInputError(JsonInputError::Reason::Unreadable, file.string() + ": cannot open: " + ec.message());
    if (size > maxBytes)
        throw JsonInputError(JsonInputError::Reason::TooLarge, file.string() + ": " + std::to_string(size) +
                                                                   " bytes is over the " + sizeText(maxBytes) +
                                                                   " limit for this file");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw JsonInputError(JsonInputError::Reason::Unreadable, file.string() + ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw JsonInputError(JsonInputError::Reason::Unreadable, file.string() + ": read error");
    std::string text = ss.str();
    // A file that grew between the size check and the read.
    if (text.size() > maxBytes)
        throw JsonInputError(JsonInputError::Reason::TooLarge,
                             file.string() + ": over the " + sizeText(maxBytes) + " limit for this file");
    return text;
}

nlohmann::json readJsonFileBounded(const std::filesystem::path& file, const JsonLimits& limits) {
    return parseJsonBounded(readFileBounded(file, limits.maxBytes), file.string(), limits);
}

}  // namespace sdw
