#pragma once
// Chat prompt formatting for the model families the workbench runs, written
// out by hand instead of rendering the Jinja chat template: Qwen3 in
// non-thinking mode and Llama-3 instruct. Everything else gets the plain
// prompt (base models).

#include "core/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sdw {

enum class ChatFamily { Plain, Qwen3, Llama3 };

const char* chatFamilyName(ChatFamily family);

// Decides by the chat template (tokenizer_config.json's chat_template, or
// chat_template.jinja, in modelDir) when there is one; without a template,
// by the special tokens the tokenizer has.
ChatFamily detectChatFamily(const Tokenizer& tokenizer, const std::filesystem::path& modelDir);

// The prompt text for one user turn, ending where the assistant's reply
// starts. Plain returns `user` unchanged and ignores `system` (no bos:
// encodePrompt's post-processor step adds it).
std::string formatChat(ChatFamily family, std::string_view user, std::string_view system = {});

// Token ids of the prompt: for Plain, encode(user, addSpecialTokens=true),
// i.e. what the tokenizer's post-processor adds (bos for Llama-2/3, Gemma;
// nothing for Qwen), as transformers' tokenizer(user) does; otherwise
// encode(formatChat(...)), whose special tokens are matched as added tokens.
std::vector<std::int32_t> encodePrompt(const Tokenizer& tokenizer, ChatFamily family, std::string_view user,
                                       std::string_view system = {});

}  // namespace sdw
