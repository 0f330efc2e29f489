// Reading a tokenizer.json into Tokenizer::Impl (see core/tokenizer_impl.h).

#include "core/tokenizer_impl.h"
#include "core/unicode.h"

#include <cstdio>
#include <set>

namespace sdw::tokenizer_detail {

// GPT-2's reversible map from bytes to printable code points: printable
// Latin-1 bytes stand for themselves, the rest are shifted to U+0100 up.
namespace {

std::array<char32_t, 256> makeByteToUnicode() {
    std::array<char32_t, 256> map{};
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[static_cast<std::size_t>(b)] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[static_cast<std::size_t>(b)] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[static_cast<std::size_t>(b)] = true;
    char32_t extra = 256;
    for (std::size_t b = 0; b < 256; ++b) map[b] = direct[b] ? static_cast<char32_t>(b) : extra++;
    return map;
}

}  // namespace

const std::array<char32_t, 256>& byteToUnicode() {
    static const auto map = makeByteToUnicode();
    return map;
}

namespace {

// Inverse of byteToUnicode: code point -> byte, -1 if the code point is not
// one of the 256.
int unicodeToByte(char32_t cp) {
    static const auto inverse = [] {
        std::array<std::int16_t, 324> inv{};
        inv.fill(-1);
        const auto& fwd = byteToUnicode();
        for (std::size_t b = 0; b < 256; ++b) inv[fwd[b]] = static_cast<std::int16_t>(b);
        return inv;
    }();
    return cp < inverse.size() ? inverse[cp] : -1;
}

}  // namespace

std::optional<std::string> byteLevelBytes(std::string_view token) {
    const auto d = unicode::decodeUtf8(token);
    std::string bytes;
    bytes.reserve(d.codePoints.size());
    for (char32_t cp : d.codePoints) {
        const int b = unicodeToByte(cp);
        if (b < 0) return std::nullopt;
        bytes.push_back(static_cast<char>(b));
    }
    return bytes;
}

int byteFallbackByte(std::string_view t) {
    auto hex = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {

std::string escapeRegex(std::string_view literal) {
    std::string out;
    for (char c : literal) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

}  // namespace

}  // namespace sdw::tokenizer_detail

namespace sdw {

using namespace tokenizer_detail;

void Tokenizer::Impl::setToken(std::int32_t id, const std::string& text, bool isSpecial) {
    if (id < 0) fail("negative token id " + std::to_string(id) + " for '" + text + "'");
    if (id > 16'000'000) fail("token id " + std::to_string(id) + " is implausibly large");
    const auto n = static_cast<std::size_t>(id) + 1;
    if (idToText.size() < n) {
        idToText.resize(n);
        idToBytes.resize(n);
        special.resize(n, 0);
    }
    idToText[static_cast<std::size_t>(id)] = text;
    special[static_cast<std::size_t>(id)] = isSpecial ? 1 : 0;
    textToId[text] = id;
}

void Tokenizer::Impl::load(const json& root) {
    if (!root.is_object()) fail("not a JSON object");
    if (!root.contains("model") || !root["model"].is_object()) fail("no \"model\" section");
    loadModel(root["model"]);
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) loadAddedTokens(root["added_tokens"]);
    loadNormalizer(root.value("normalizer", json()));
    // Added tokens with normalized=true are matched in normalized text, so
    // their own content is normalized the same way (as the reference does).
    for (const auto& [content, index] : normalizedPending) {
        const std::string n = normalize(content);
        if (!n.empty()) addToMatcher(normalizedMatcher, n, index);
    }
    normalizedPending.clear();
    bool byteLevelSeen = false;
    const json pre = root.value("pre_tokenizer", json());
    if (!pre.is_null()) loadPreTokenizer(pre, byteLevelSeen);
    loadDecoder(root.value("decoder", json()));
    // Byte-level BPE needs the ByteLevel pre-tokenizer and decoder; without
    // them the vocabulary is read SentencePiece-style, which needs a decoder
    // that maps "▁" back to spaces.
    byteLevel = byteLevelSeen || decoderByteLevel;
    if (byteLevel && !byteLevelSeen) fail("pre_tokenizer has no ByteLevel step (a ByteLevel decoder needs one)");
    if (byteLevel && !decoderByteLevel) fail("a ByteLevel pre-tokenizer needs a ByteLevel decoder");
    if (!byteLevel && decoderReplace.empty())
        fail("neither byte-level (ByteLevel pre-tokenizer and decoder) nor SentencePiece-style "
             "(a Metaspace or Replace decoder): not supported");
    finishDecoder();
    loadPostProcessor(root.value("post_processor", json()));
}

void Tokenizer::Impl::finishDecoder() {
    isByteToken.assign(idToText.size(), 0);
    for (std::size_t id = 0; id < idToText.size(); ++id) {
        const std::string& text = idToText[id];
        if (byteLevel) {
            auto bytes = byteLevelBytes(text);
            idToBytes[id] = bytes ? std::move(*bytes) : text;
            continue;
        }
        if (const int b = decoderByteFallback ? byteFallbackByte(text) : -1; b >= 0) {
            idToBytes[id] = std::string(1, static_cast<char>(b));
            isByteToken[id] = 1;
            continue;
        }
        std::string out = text;
        for (const auto& [from, to] : decoderReplace) out = replaceAll(out, from, to);
        idToBytes[id] = std::move(out);
    }
}

void Tokenizer::Impl::loadModel(const json& model) {
    const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
    if (type != "BPE")
        fail("unsupported model type \"" + type + "\" (only BPE is supported)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json v = model.value(key, json());
        if (v.is_string() && !v.get<std::string>().empty())
            fail(std::string("unsupported BPE option ") + key + " = \"" + v.get<std::string>() + "\"");
    }
    if (!model.contains("vocab") || !model["vocab"].is_object() || model["vocab"].empty())
        fail("model.vocab is missing or empty");
    for (const auto& [text, idv] : model["vocab"].items()) {
        if (!idv.is_number_integer()) fail("model.vocab entry '" + text + "' has no integer id");
        setToken(idv.get<std::int32_t>(), text, false);
    }
    for (const auto& [text, id] : textToId)
        if (auto bytes = byteLevelBytes(text)) bytesToModelId.emplace(std::move(*bytes), id);
    const auto& fwd = byteToUnicode();
    for (std::size_t b = 0; b < 256; ++b) {
        std::string s;
        unicode::appendUtf8(s, fwd[b]);
        const auto id = find(s);
        byteId[b] = id ? *id : -1;
    }
    if (model.contains("unk_token") && model["unk_token"].is_string()) unkId = find(model["unk_token"].get<std::string>());
    ignoreMerges = model.value("ignore_merges", false);
    byteFallback = model.value("byte_fallback", false);
    fuseUnk = model.value("fuse_unk", false);
    char name[8];
    for (std::size_t b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(b));
        const auto id = find(name);
        byteFallbackId[b] = id ? *id : -1;
    }

    const json merges_ = model.value("merges", json::array());
    if (!merges_.is_array()) fail("model.merges is not a list");
    merges.reserve(merges_.size());
    std::int32_t rank = 0;
    for (const auto& m : merges_) {
        std::string a, b;
        if (m.is_string()) {
            const std::string s = m.get<std::string>();
            const auto sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                fail("merge " + std::to_string(rank) + " \"" + s + "\" is not two tokens separated by a space");
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            fail("merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
        }
        const auto ia = find(a), ib = find(b), ic = find(a + b);
        if (!ia) fail("merge " + std::to_string(rank) + " refers to unknown token '" + a + "'");
        if (!ib) fail("merge " + std::to_string(rank) + " refers to unknown token '" + b + "'");
        if (!ic) fail("merge " + std::to_string(rank) + " makes '" + a + b + "', which is not in the vocabulary");
        merges.emplace(pairKey(*ia, *ib), Merge{rank, *ic});  // the first (best) rank wins
        ++rank;
    }
}

void Tokenizer::Impl::addToMatcher(Matcher& m, std::string_view content, std::int32_t index) {
    std::int32_t node = 0;
    for (char c : content) {
        const auto uc = static_cast<unsigned char>(c);
        auto& children = m.trie[static_cast<std::size_t>(node)].children;
        const auto it = children.find(uc);
        if (it != children.end()) {
            node = it->second;
        } else {
            const auto next = static_cast<std::int32_t>(m.trie.size());
            children.emplace(uc, next);
            m.trie.push_back({});
            node = next;
        }
    }
    m.trie[static_cast<std::size_t>(node)].token = index;
}

void Tokenizer::Impl::loadAddedTokens(const json& list) {
    if (!list.is_array()) fail("added_tokens is not a list");
    for (const auto& t : list) {
        if (!t.is_object() || !t.contains("id") || !t.contains("content") || !t["content"].is_string())
            fail("an added_tokens entry lacks id or content");
        const std::string content = t["content"].get<std::string>();
        if (content.empty()) fail("an added token has empty content");
        const auto id = t["id"].get<std::int32_t>();
        const bool isSpecial = t.value("special", false);
        setToken(id, content, isSpecial);
        added.push_back({id, t.value("lstrip", false), t.value("rstrip", false), t.value("single_word", false)});
        const auto index = static_cast<std::int32_t>(added.size()) - 1;
        // The reference's default: special tokens match raw text, others normalized text.
        if (t.value("normalized", !isSpecial))
            normalizedPending.emplace_back(content, index);
        else
            addToMatcher(rawMatcher, content, index);
    }
}

void Tokenizer::Impl::checkSequence(const char* section, int depth, std::size_t steps) const {
    if (depth > kMaxSequenceDepth)
        fail(std::string(section) + ": Sequence nested deeper than " + std::to_string(kMaxSequenceDepth) + " levels");
    if (steps > kMaxSteps) fail(std::string(section) + ": more than " + std::to_string(kMaxSteps) + " steps");
}

void Tokenizer::Impl::loadNormalizer(const json& n, int depth) {
    if (n.is_null()) return;
    checkSequence("normalizer", depth, normalizers.size());
    const std::string type = n.value("type", "");
    if (type == "NFC") {
        normalizers.push_back({NormalizerStep::Kind::Nfc, {}, {}});
    } else if (type == "NFKC") {
        normalizers.push_back({NormalizerStep::Kind::Nfkc, {}, {}});
    } else if (type == "Prepend") {
        normalizers.push_back({NormalizerStep::Kind::Prepend, n.value("prepend", ""), {}});
    } else if (type == "Replace") {
        const json pat = n.value("pattern", json());
        if (!pat.is_object() || !pat.contains("String") || !pat["String"].is_string())
            fail("Replace normalizer: only a String pattern is supported");
        const std::string from = pat["String"].get<std::string>();
        if (from.empty()) fail("Replace normalizer with an empty pattern");
        normalizers.push_back({NormalizerStep::Kind::Replace, from, n.value("content", "")});
    } else if (type == "Strip") {
        NormalizerStep step{NormalizerStep::Kind::Strip, {}, {}};
        step.left = n.value("strip_left", true);
        step.right = n.value("strip_right", true);
        normalizers.push_back(step);
    } else if (type == "Sequence") {
        for (const auto& sub : n.value("normalizers", json::array())) loadNormalizer(sub, depth + 1);
    } else {
        fail("unsupported normalizer \"" + type + "\" (supported: NFC, NFKC, Prepend, Replace, Strip, Sequence)");
    }
}

void Tokenizer::Impl::loadPreTokenizer(const json& p, bool& byteLevelSeen, int depth) {
    checkSequence("pre_tokenizer", depth, preSteps.size());
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
        for (const auto& sub : p.value("pretokenizers", json::array())) loadPreTokenizer(sub, byteLevelSeen, depth + 1);
        return;
    }
    if (byteLevelSeen) fail("pre_tokenizer step \"" + type + "\" after ByteLevel is not supported");
    PreStep step;
    if (type == "Split") {
        const json pat = p.value("pattern", json());
        std::string regex;
        if (pat.is_object() && pat.contains("Regex"))
            regex = pat["Regex"].get<std::string>();
        else if (pat.is_object() && pat.contains("String"))
            regex = escapeRegex(pat["String"].get<std::string>());
        else
            fail("Split pre-tokenizer without a Regex or String pattern");
        step.invert = p.value("invert", false);
        const std::string behavior = p.value("behavior", "Isolated");
        if (behavior == "Isolated") step.behavior = Behavior::Isolated;
        else if (behavior == "Removed") step.behavior = Behavior::Removed;
        else if (behavior == "MergedWithPrevious") step.behavior = Behavior::MergedWithPrevious;
        else if (behavior == "MergedWithNext") step.behavior = Behavior::MergedWithNext;
        else if (behavior == "Contiguous") step.behavior = Behavior::Contiguous;
        else fail("Split behavior \"" + behavior + "\" is not one of Isolated, Removed, MergedWithPrevious, "
                  "MergedWithNext, Contiguous");
        try {
            step.regex.emplace(regex);
        } catch (const RegexError& e) {
            fail(std::string("pre_tokenizer Split pattern: ") + e.what());
        }
    } else if (type == "ByteLevel") {
        byteLevelSeen = true;
        step.kind = PreStep::Kind::ByteLevel;
        step.addPrefixSpace = p.value("add_prefix_space", false);
        if (p.value("use_regex", true)) step.regex.emplace(kGpt2Pattern);
    } else if (type == "Metaspace") {
        step.kind = PreStep::Kind::Metaspace;
        Metaspace& m = step.meta;
        m.replacement = p.value("replacement", m.replacement);
        if (m.replacement.empty()) fail("Metaspace pre-tokenizer with an empty replacement");
        m.split = p.value("split", true);
        std::string scheme = p.value("prepend_scheme", "");
        if (scheme.empty()) scheme = p.value("add_prefix_space", true) ? "always" : "never";
        if (scheme == "always") m.prepend = Metaspace::Prepend::Always;
        else if (scheme == "first") m.prepend = Metaspace::Prepend::First;
        else if (scheme == "never") m.prepend = Metaspace::Prepend::Never;
        else fail("Metaspace prepend_scheme \"" + scheme + "\" is not one of always, first, never");
    } else {
        fail("unsupported pre_tokenizer \"" + type + "\" (supported: Split, ByteLevel, Metaspace, Sequence)");
    }
    preSteps.push_back(std::move(step));
}

void Tokenizer::Impl::loadDecoder(const json& d, int depth) {
    if (d.is_null()) fail("no decoder (a ByteLevel, Metaspace or Replace decoder is required)");
    checkSequence("decoder", depth, ++decoderSteps);
    const std::string type = d.value("type", "");
    if (type == "ByteLevel") {
        decoderByteLevel = true;
    } else if (type == "Sequence") {
        for (const auto& sub : d.value("decoders", json::array())) loadDecoder(sub, depth + 1);
    } else if (type == "Replace") {
        const json pat = d.value("pattern", json());
        if (!pat.is_object() || !pat.contains("String") || !pat["String"].is_string())
            fail("Replace decoder: only a String pattern is supported");
        decoderReplace.emplace_back(pat["String"].get<std::string>(), d.value("content", ""));
    } else if (type == "ByteFallback") {
        decoderByteFallback = true;
    } else if (type == "Fuse") {
        decoderFused = true;  // decoding here always joins the pieces
    } else if (type == "Strip") {
        // Strip acts on each piece; after Fuse there is one piece, the whole text.
        if (!decoderFused) fail("Strip decoder before Fuse (a strip of every token) is not supported");
        stripContent = d.value("content", std::string(" "));
        if (unicode::decodeUtf8(stripContent).codePoints.size() != 1)
            fail("Strip decoder content must be one character");
        stripStart = d.value("start", std::size_t{0});
        stripStop = d.value("stop", std::size_t{0});
    } else if (type == "Metaspace") {
        decoderReplace.emplace_back(d.value("replacement", std::string("\xE2\x96\x81")), " ");
        std::string scheme = d.value("prepend_scheme", "");
        if (scheme.empty()) scheme = d.value("add_prefix_space", true) ? "always" : "never";
        stripContent = " ";
        stripStart = scheme == "never" ? 0 : 1;
    } else {
        fail("unsupported decoder \"" + type + "\" (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, "
             "Sequence)");
    }
}

void Tokenizer::Impl::loadPostProcessor(const json& p, int depth) {
    if (p.is_null()) return;
    checkSequence("post_processor", depth, ++postProcessorSteps);
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") return;  // offsets only
    if (type == "Sequence") {
        for (const auto& sub : p.value("processors", json::array())) loadPostProcessor(sub, depth + 1);
        return;
    }
    if (type == "TemplateProcessing") {
        const json specials = p.value("special_tokens", json::object());
        bool afterSequence = false;
        for (const auto& item : p.value("single", json::array())) {
            if (item.contains("Sequence")) {
                afterSequence = true;
                continue;
            }
            if (!item.contains("SpecialToken")) fail("post_processor template item not understood");
            const std::string name = item["SpecialToken"].value("id", "");
            std::vector<std::int32_t> ids;
            if (specials.contains(name) && specials[name].contains("ids")) {
                ids = specials[name]["ids"].get<std::vector<std::int32_t>>();
            } else if (const auto id = find(name)) {
                ids = {*id};
            } else {
                fail("post_processor template names unknown token '" + name + "'");
            }
            auto& dst = afterSequence ? suffixIds : prefixIds;
            dst.insert(dst.end(), ids.begin(), ids.end());
        }
        return;
    }
    if (type == "RobertaProcessing" || type == "BertProcessing") {
        const json cls = p.value("cls", json()), sep = p.value("sep", json());
        if (!cls.is_array() || !sep.is_array() || cls.size() != 2 || sep.size() != 2)
            fail(type + " post_processor without cls/sep");
        prefixIds = {cls[1].get<std::int32_t>()};
        suffixIds = {sep[1].get<std::int32_t>()};
        return;
    }
    fail("unsupported post_processor \"" + type + "\"");
}

void Tokenizer::Impl::loadConfig(const json& cfg) {
    // bos/eos only from the config, never from a token's spelling: a
    // Qwen-like vocabulary holds "<s>" as ordinary text.
    auto tokenOf = [&](const char* key) -> std::optional<std::int32_t> {
        if (!cfg.contains(key)) return std::nullopt;
        const json& v = cfg[key];
        std::string text;
        if (v.is_string())
            text = v.get<std::string>();
        else if (v.is_object() && v.contains("content") && v["content"].is_string())
            text = v["content"].get<std::string>();
        if (text.empty()) return std::nullopt;
        return find(text);
    };
    bos = tokenOf("bos_token");
    eos = tokenOf("eos_token");
    // transformers' Llama and Gemma tokenizer classes rebuild the template
    // from add_bos_token (default true) and add_eos_token (default false);
    // the other classes keep the file's post-processor.
    const std::string cls = cfg.value("tokenizer_class", "");
    static const std::set<std::string> kRebuilds = {"LlamaTokenizer",      "LlamaTokenizerFast",
                                                    "CodeLlamaTokenizer",  "CodeLlamaTokenizerFast",
                                                    "GemmaTokenizer",      "GemmaTokenizerFast"};
    if (kRebuilds.count(cls)) {
        auto flag = [&](const char* key, bool dflt) {
            const json v = cfg.value(key, json());
            return v.is_boolean() ? v.get<bool>() : dflt;
        };
        const bool addBos = flag("add_bos_token", true), addEos = flag("add_eos_token", false);
        if (addBos && !bos) fail("tokenizer_config.json: add_bos_token is true but there is no bos_token");
        if (addEos && !eos) fail("tokenizer_config.json: add_eos_token is true but there is no eos_token");
        prefixIds.clear();
        suffixIds.clear();
        if (addBos) prefixIds.push_back(*bos);
        if (addEos) suffixIds.push_back(*eos);
    }
    if (cfg.contains("chat_template")) {
        const json& ct = cfg["chat_template"];
        if (ct.is_string()) {
            chatTemplate = ct.get<std::string>();
        } else if (ct.is_array()) {
            for (const auto& t : ct)
                if (t.is_object() && t.contains("template") && t["template"].is_string())
                    chatTemplate += t["template"].get<std::string>() + "\n";
        }
    }
}

}  // namespace sdw
