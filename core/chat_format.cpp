#include "core/chat_format.h"

#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace sdw {

namespace {

std::string readText(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The chat template text of a model folder, "" if it has none.
std::string findChatTemplate(const Tokenizer& tokenizer, const std::filesystem::path& modelDir) {
    std::error_code ec;
    const auto jinja = modelDir / "chat_template.jinja";
    if (std::filesystem::is_regular_file(jinja, ec)) return readText(jinja);
    const auto config = modelDir / "tokenizer_config.json";
    if (std::filesystem::is_regular_file(config, ec)) {
        nlohmann::json cfg;
        try {
            cfg = readJsonFileBounded(config);
        } catch (const JsonInputError&) {
            return {};  // loading the tokenizer reports what is wrong with the file
        }
        if (cfg.is_object() && cfg.contains("chat_template")) {
            const auto& ct = cfg["chat_template"];
            if (ct.is_string()) return ct.get<std::string>();
            std::string all;
            if (ct.is_array())
                for (const auto& t : ct)
                    if (t.is_object() && t.contains("template") && t["template"].is_string())
                        all += t["template"].get<std::string>() + "\n";
            return all;
        }
        return {};
    }
    return tokenizer.chatTemplate();
}

bool hasAll(const Tokenizer& tok, std::initializer_list<std::string_view> names) {
    for (auto n : names)
        if (!tok.tokenId(n)) return false;
    return true;
}

}  // namespace

const char* chatFamilyName(ChatFamily family) {
    switch (family) {
        case ChatFamily::Plain: return "plain";
        case ChatFamily::Qwen3: return "qwen3";
        case ChatFamily::Llama3: return "llama3";
    }
    return "plain";
}

ChatFamily detectChatFamily(const Tokenizer& tokenizer, const std::filesystem::path& modelDir) {
    const bool llamaTokens = hasAll(tokenizer, {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"});
    const bool qwenTokens = hasAll(tokenizer, {"<|im_start|>", "<|im_end|>"});
    const std::string tmpl = findChatTemplate(tokenizer, modelDir);
    if (!tmpl.empty()) {
        if (llamaTokens && tmpl.find("<|start_header_id|>") != std::string::npos) return ChatFamily::Llama3;
        if (qwenTokens && tmpl.find("<|im_start|>") != std::string::npos) return ChatFamily::Qwen3;
        return ChatFamily::Plain;
    }
    if (llamaTokens) return ChatFamily::Llama3;
    if (qwenTokens) return ChatFamily::Qwen3;
    return ChatFamily::Plain;
}

std::string formatChat(ChatFamily family, std::string_view user, std::string_view system) {
    std::string out;
    switch (family) {
        case ChatFamily::Plain:
            out = user;
            break;
        case ChatFamily::Qwen3:
            if (!system.empty()) out.append("<|im_start|>system\n").append(system).append("<|im_end|>\n");
            out.append("<|im_start|>user\n").append(user).append("<|im_end|>\n");
            // Non-thinking mode: the template's enable_thinking=false inserts an empty think block.
            out.append("<|im_start|>assistant\n<think>\n\n</think>\n\n");
            break;
        case ChatFamily::Llama3:
            out = "<|begin_of_text|>";
            if (!system.empty())
                out.append("<|start_header_id|>system<|end_header_id|>\n\n").append(system).append("<|eot_id|>");
            out.append("<|start_header_id|>user<|end_header_id|>\n\n").append(user).append("<|eot_id|>");
            out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
            break;
    }
    return out;
}

std::vector<std::int32_t> encodePrompt(const Tokenizer& tokenizer, ChatFamily family, std::string_view user,
                                       std::string_view system) {
    if (family != ChatFamily::Plain) return tokenizer.encode(formatChat(family, user, system), false);
    return tokenizer.encode(user, true);
}

}  // namespace sdw
