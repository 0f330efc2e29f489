#include "core/tokenizer.h"

#include "core/regex_lite.h"
#include "core/unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <mutex>
#include <queue>
#include <sstream>
#include <unordered_map>

namespace sdw {

namespace {

using json = nlohmann::json;

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's reversible map from bytes to printable code points: printable
// Latin-1 bytes stand for themselves, the rest are shifted to U+0100 up.
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

const std::array<char32_t, 256>& byteToUnicode() {
    static const auto map = makeByteToUnicode();
    return map;
}

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

// The bytes a vocabulary string stands for if every character is one of the
// 256 byte characters.
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

// What the ByteLevel decoder makes of a token: its bytes, or the string
// itself when it is not made of byte characters (e.g. some special tokens).
std::string tokenToBytes(std::string_view token) {
    auto bytes = byteLevelBytes(token);
    return bytes ? std::move(*bytes) : std::string(token);
}

bool isAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string escapeRegex(std::string_view literal) {
    std::string out;
    for (char c : literal) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

std::uint64_t pairKey(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace

struct Tokenizer::Impl {
    std::string source;

    // Vocabulary: model vocab and added tokens.
    std::unordered_map<std::string, std::int32_t> textToId;
    std::vector<std::string> idToText;
    std::vector<std::string> idToBytes;
    std::vector<std::uint8_t> special;
    std::unordered_map<std::string, std::int32_t> bytesToModelId;  // for ignore_merges
    std::array<std::int32_t, 256> byteId{};
    std::optional<std::int32_t> unkId;

    struct Merge {
        std::int32_t rank;
        std::int32_t newId;
    };
    std::unordered_map<std::uint64_t, Merge> merges;
    bool ignoreMerges = false;

    // Added tokens, matched on raw text through a byte trie.
    struct AddedToken {
        std::int32_t id;
        bool lstrip = false;
        bool rstrip = false;
    };
    struct TrieNode {
        std::map<unsigned char, std::int32_t> children;
        std::int32_t token = -1;  // index into added
    };
    std::vector<AddedToken> added;
    std::vector<TrieNode> trie{TrieNode{}};

    bool nfc = false;
    struct SplitStage {
        RegexLite regex;
        bool removeMatches = false;  // behaviour "Removed" rather than "Isolated"
    };
    std::vector<SplitStage> splits;       // before the ByteLevel step
    bool addPrefixSpace = false;          // ByteLevel add_prefix_space
    std::optional<RegexLite> byteLevelRegex;  // ByteLevel use_regex

    std::vector<std::int32_t> prefixIds, suffixIds;  // post-processor template
    std::optional<std::int32_t> bos, eos;
    std::string chatTemplate;

    mutable std::mutex cacheMutex;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;

    [[noreturn]] void fail(const std::string& what) const { throw TokenizerError(source + ": " + what); }

    std::optional<std::int32_t> find(std::string_view text) const {
        const auto it = textToId.find(std::string(text));
        if (it == textToId.end()) return std::nullopt;
        return it->second;
    }

    void setToken(std::int32_t id, const std::string& text, bool isSpecial) {
        if (id < 0) fail("negative token id " + std::to_string(id) + " for '" + text + "'");
        if (id > 16'000'000) fail("token id " + std::to_string(id) + " is implausibly large");
        const auto n = static_cast<std::size_t>(id) + 1;
        if (idToText.size() < n) {
            idToText.resize(n);
            idToBytes.resize(n);
            special.resize(n, 0);
        }
        idToText[static_cast<std::size_t>(id)] = text;
        idToBytes[static_cast<std::size_t>(id)] = tokenToBytes(text);
        special[static_cast<std::size_t>(id)] = isSpecial ? 1 : 0;
        textToId[text] = id;
    }

    void load(const json& root);
    void loadModel(const json& model);
    void loadAddedTokens(const json& list);
    void loadNormalizer(const json& n);
    void loadPreTokenizer(const json& p, bool& byteLevelSeen);
    void loadDecoder(const json& d);
    void loadPostProcessor(const json& p);
    void loadConfig(const json& cfg);
    void guessBosEos();

    std::vector<std::string> preTokenize(std::string_view text) const;
    void bpe(std::string_view piece, std::vector<std::int32_t>& out) const;
    void encodeText(std::string_view text, std::vector<std::int32_t>& out) const;
};

void Tokenizer::Impl::load(const json& root) {
    if (!root.is_object()) fail("not a JSON object");
    if (!root.contains("model") || !root["model"].is_object()) fail("no \"model\" section");
    loadModel(root["model"]);
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) loadAddedTokens(root["added_tokens"]);
    loadNormalizer(root.value("normalizer", json()));
    bool byteLevelSeen = false;
    const json pre = root.value("pre_tokenizer", json());
    if (pre.is_null()) fail("no pre_tokenizer (only byte-level BPE with a ByteLevel pre-tokenizer is supported)");
    loadPreTokenizer(pre, byteLevelSeen);
    if (!byteLevelSeen) fail("pre_tokenizer has no ByteLevel step (only byte-level BPE is supported)");
    loadDecoder(root.value("decoder", json()));
    loadPostProcessor(root.value("post_processor", json()));
}

void Tokenizer::Impl::loadModel(const json& model) {
    const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
    if (type != "BPE")
        fail("unsupported model type \"" + type + "\" (only byte-level BPE is supported)");
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

void Tokenizer::Impl::loadAddedTokens(const json& list) {
    if (!list.is_array()) fail("added_tokens is not a list");
    for (const auto& t : list) {
        if (!t.is_object() || !t.contains("id") || !t.contains("content") || !t["content"].is_string())
            fail("an added_tokens entry lacks id or content");
        const std::string content = t["content"].get<std::string>();
        if (content.empty()) fail("an added token has empty content");
        const auto id = t["id"].get<std::int32_t>();
        setToken(id, content, t.value("special", false));
        added.push_back({id, t.value("lstrip", false), t.value("rstrip", false)});
        std::int32_t node = 0;
        for (char c : content) {
            const auto uc = static_cast<unsigned char>(c);
            auto& children = trie[static_cast<std::size_t>(node)].children;
            const auto it = children.find(uc);
            if (it != children.end()) {
                node = it->second;
            } else {
                const auto next = static_cast<std::int32_t>(trie.size());
                children.emplace(uc, next);
                trie.push_back({});
                node = next;
            }
        }
        trie[static_cast<std::size_t>(node)].token = static_cast<std::int32_t>(added.size()) - 1;
    }
}

void Tokenizer::Impl::loadNormalizer(const json& n) {
    if (n.is_null()) return;
    const std::string type = n.value("type", "");
    if (type == "NFC") {
        nfc = true;
    } else if (type == "Sequence") {
        for (const auto& sub : n.value("normalizers", json::array())) loadNormalizer(sub);
    } else {
        fail("unsupported normalizer \"" + type + "\" (supported: NFC, Sequence)");
    }
}

void Tokenizer::Impl::loadPreTokenizer(const json& p, bool& byteLevelSeen) {
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
        for (const auto& sub : p.value("pretokenizers", json::array())) loadPreTokenizer(sub, byteLevelSeen);
        return;
    }
    if (byteLevelSeen) fail("pre_tokenizer step \"" + type + "\" after ByteLevel is not supported");
    if (type == "Split") {
        const json pat = p.value("pattern", json());
        std::string regex;
        if (pat.is_object() && pat.contains("Regex"))
            regex = pat["Regex"].get<std::string>();
        else if (pat.is_object() && pat.contains("String"))
            regex = escapeRegex(pat["String"].get<std::string>());
        else
            fail("Split pre-tokenizer without a Regex or String pattern");
        if (p.value("invert", false)) fail("Split pre-tokenizer with invert=true is not supported");
        const std::string behavior = p.value("behavior", "Isolated");
        if (behavior != "Isolated" && behavior != "Removed")
            fail("Split behavior \"" + behavior + "\" is not supported (supported: Isolated, Removed)");
        try {
            splits.push_back({RegexLite(regex), behavior == "Removed"});
        } catch (const RegexError& e) {
            fail(std::string("pre_tokenizer Split pattern: ") + e.what());
        }
    } else if (type == "ByteLevel") {
        byteLevelSeen = true;
        addPrefixSpace = p.value("add_prefix_space", false);
        if (p.value("use_regex", true)) byteLevelRegex.emplace(kGpt2Pattern);
    } else {
        fail("unsupported pre_tokenizer \"" + type + "\" (supported: Split, ByteLevel, Sequence)");
    }
}

void Tokenizer::Impl::loadDecoder(const json& d) {
    if (d.is_null()) fail("no decoder (a ByteLevel decoder is required)");
    const std::string type = d.value("type", "");
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
        for (const auto& sub : d.value("decoders", json::array())) loadDecoder(sub);
        return;
    }
    fail("unsupported decoder \"" + type + "\" (supported: ByteLevel)");
}

void Tokenizer::Impl::loadPostProcessor(const json& p) {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") return;  // offsets only
    if (type == "Sequence") {
        for (const auto& sub : p.value("processors", json::array())) loadPostProcessor(sub);
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
    auto tokenOf = [&](const char* key, std::optional<std::int32_t>& dst) {
        if (!cfg.contains(key)) return false;
        const json& v = cfg[key];
        std::string text;
        if (v.is_string())
            text = v.get<std::string>();
        else if (v.is_object() && v.contains("content") && v["content"].is_string())
            text = v["content"].get<std::string>();
        dst = text.empty() ? std::nullopt : find(text);
        return true;
    };
    const bool haveBos = tokenOf("bos_token", bos);
    const bool haveEos = tokenOf("eos_token", eos);
    if (!haveBos || !haveEos) {
        const auto saveBos = bos, saveEos = eos;
        guessBosEos();
        if (haveBos) bos = saveBos;
        if (haveEos) eos = saveEos;
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

void Tokenizer::Impl::guessBosEos() {
    auto first = [&](std::initializer_list<std::string_view> names) -> std::optional<std::int32_t> {
        for (auto n : names)
            if (const auto id = find(n)) return id;
        return std::nullopt;
    };
    bos = first({"<|begin_of_text|>", "<s>", "<|startoftext|>", "<bos>", "<|bos|>"});
    eos = first({"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>", "<|eos|>"});
}

std::vector<std::string> Tokenizer::Impl::preTokenize(std::string_view text) const {
    std::vector<std::string> pieces{std::string(text)};
    auto applyRegex = [&](const RegexLite& re, bool remove) {
        std::vector<std::string> next;
        next.reserve(pieces.size() * 2);
        for (const auto& piece : pieces) {
            if (remove) {
                std::size_t last = 0;
                for (const auto& [b, e] : re.findAll(piece)) {
                    if (b > last) next.push_back(piece.substr(last, b - last));
                    last = e;
                }
                if (last < piece.size()) next.push_back(piece.substr(last));
            } else {
                for (auto sv : re.splitIsolated(piece)) next.emplace_back(sv);
            }
        }
        pieces = std::move(next);
    };
    for (const auto& s : splits) applyRegex(s.regex, s.removeMatches);
    if (addPrefixSpace)
        for (auto& p : pieces)
            if (p.empty() || p[0] != ' ') p.insert(p.begin(), ' ');
    if (byteLevelRegex) applyRegex(*byteLevelRegex, false);
    return pieces;
}

void Tokenizer::Impl::bpe(std::string_view piece, std::vector<std::int32_t>& out) const {
    if (piece.empty()) return;
    if (ignoreMerges) {
        const auto it = bytesToModelId.find(std::string(piece));
        if (it != bytesToModelId.end()) {
            out.push_back(it->second);
            return;
        }
    }
    {
        std::lock_guard lock(cacheMutex);
        const auto it = cache.find(std::string(piece));
        if (it != cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }

    // Symbols in a doubly linked list; candidate merges in a min-heap by
    // (rank, position). Stale heap entries are skipped when popped.
    struct Symbol {
        std::int32_t id;
        std::int32_t prev;
        std::int32_t next;
        bool alive;
    };
    std::vector<Symbol> sym;
    sym.reserve(piece.size());
    for (char c : piece) {
        std::int32_t id = byteId[static_cast<unsigned char>(c)];
        if (id < 0) {
            if (!unkId) continue;  // as the reference: unknown characters vanish without an unk token
            id = *unkId;
        }
        const auto n = static_cast<std::int32_t>(sym.size());
        sym.push_back({id, n - 1, n + 1, true});
    }
    if (!sym.empty()) sym.back().next = -1;

    struct Candidate {
        std::int32_t rank;
        std::int32_t pos;
        std::int32_t newId;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto consider = [&](std::int32_t pos) {
        if (pos < 0) return;
        const std::int32_t nxt = sym[static_cast<std::size_t>(pos)].next;
        if (nxt < 0) return;
        const auto it = merges.find(pairKey(sym[static_cast<std::size_t>(pos)].id, sym[static_cast<std::size_t>(nxt)].id));
        if (it != merges.end()) heap.push({it->second.rank, pos, it->second.newId});
    };
    for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(sym.size()); ++i) consider(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        auto& left = sym[static_cast<std::size_t>(c.pos)];
        if (!left.alive || left.next < 0) continue;
        auto& right = sym[static_cast<std::size_t>(left.next)];
        const auto it = merges.find(pairKey(left.id, right.id));
        if (it == merges.end() || it->second.newId != c.newId) continue;
        left.id = c.newId;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = c.pos;
        consider(left.prev);
        consider(c.pos);
    }
    std::vector<std::int32_t> ids;
    for (std::int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[static_cast<std::size_t>(i)].next) ids.push_back(sym[static_cast<std::size_t>(i)].id);
    out.insert(out.end(), ids.begin(), ids.end());

    std::lock_guard lock(cacheMutex);
    if (cache.size() >= 200'000) cache.clear();  // bounded; pieces repeat a lot in practice
    cache.emplace(std::string(piece), std::move(ids));
}

void Tokenizer::Impl::encodeText(std::string_view text, std::vector<std::int32_t>& out) const {
    if (text.empty()) return;
    const std::string normalized = nfc ? unicode::nfc(text) : std::string(text);
    for (const auto& piece : preTokenize(normalized)) bpe(piece, out);
}

// ---- Tokenizer ---------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer::~Tokenizer() = default;

namespace {

std::shared_ptr<Tokenizer::Impl> parseTokenizer(std::string_view text, std::string sourceName) {
    auto impl = std::make_shared<Tokenizer::Impl>();
    impl->source = std::move(sourceName);
    json root;
    try {
        root = json::parse(text);
    } catch (const json::exception& e) {
        impl->fail(std::string("not valid JSON: ") + e.what());
    }
    try {
        impl->load(root);
    } catch (const json::exception& e) {
        impl->fail(std::string("unexpected structure: ") + e.what());
    }
    return impl;
}

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw TokenizerError(path.string() + ": cannot open file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw TokenizerError(path.string() + ": read error");
    return ss.str();
}

}  // namespace

Tokenizer Tokenizer::fromJson(std::string_view jsonText, std::string sourceName) {
    auto impl = parseTokenizer(jsonText, std::move(sourceName));
    impl->guessBosEos();
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::fromFile(const std::filesystem::path& tokenizerJson) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(tokenizerJson, ec))
        throw TokenizerError(tokenizerJson.string() + ": no such file");
    auto impl = parseTokenizer(readFile(tokenizerJson), tokenizerJson.string());
    impl->guessBosEos();
    const auto configPath = tokenizerJson.parent_path() / "tokenizer_config.json";
    if (std::filesystem::is_regular_file(configPath, ec)) {
        try {
            impl->loadConfig(json::parse(readFile(configPath)));
        } catch (const json::exception& e) {
            throw TokenizerError(configPath.string() + ": " + e.what());
        }
    }
    return Tokenizer(std::move(impl));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool addSpecialTokens) const {
    const Impl& m = *impl_;
    std::vector<std::int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (addSpecialTokens) out.insert(out.end(), m.prefixIds.begin(), m.prefixIds.end());

    // Split out added tokens: leftmost match, longest at that position.
    std::size_t segStart = 0, i = 0;
    while (i < text.size()) {
        std::int32_t node = 0, best = -1;
        std::size_t bestEnd = 0;
        for (std::size_t j = i; j < text.size(); ++j) {
            const auto& ch = m.trie[static_cast<std::size_t>(node)].children;
            const auto it = ch.find(static_cast<unsigned char>(text[j]));
            if (it == ch.end()) break;
            node = it->second;
            if (m.trie[static_cast<std::size_t>(node)].token >= 0) {
                best = m.trie[static_cast<std::size_t>(node)].token;
                bestEnd = j + 1;
            }
        }
        if (best < 0) {
            ++i;
            continue;
        }
        const auto& tok = m.added[static_cast<std::size_t>(best)];
        std::size_t segEnd = i;
        if (tok.lstrip)
            while (segEnd > segStart && isAsciiSpace(text[segEnd - 1])) --segEnd;
        if (tok.rstrip)
            while (bestEnd < text.size() && isAsciiSpace(text[bestEnd])) ++bestEnd;
        m.encodeText(text.substr(segStart, segEnd - segStart), out);
        out.push_back(tok.id);
        segStart = i = bestEnd;
    }
    m.encodeText(text.substr(segStart), out);

    if (addSpecialTokens) out.insert(out.end(), m.suffixIds.begin(), m.suffixIds.end());
    return out;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecialTokens) const {
    std::string bytes;
    for (std::int32_t id : ids) {
        if (skipSpecialTokens && isSpecial(id)) continue;
        bytes += tokenBytes(id);
    }
    return unicode::utf8Lossy(bytes);
}

const std::string& Tokenizer::tokenBytes(std::int32_t id) const {
    static const std::string kEmpty;
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->idToBytes.size()) return kEmpty;
    return impl_->idToBytes[static_cast<std::size_t>(id)];
}

std::string Tokenizer::tokenText(std::int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->idToText.size()) return {};
    return impl_->idToText[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> Tokenizer::tokenId(std::string_view text) const { return impl_->find(text); }

std::int32_t Tokenizer::vocabSize() const { return static_cast<std::int32_t>(impl_->idToText.size()); }

bool Tokenizer::isSpecial(std::int32_t id) const {
    return id >= 0 && static_cast<std::size_t>(id) < impl_->special.size() && impl_->special[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> Tokenizer::bosId() const { return impl_->bos; }
std::optional<std::int32_t> Tokenizer::eosId() const { return impl_->eos; }

std::vector<std::int32_t> Tokenizer::stopIds() const {
    std::vector<std::int32_t> ids;
    auto add = [&](std::optional<std::int32_t> id) {
        if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
    };
    add(impl_->eos);
    for (std::string_view name : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|endoftext|>"}) add(impl_->find(name));
    return ids;
}

const std::string& Tokenizer::chatTemplate() const { return impl_->chatTemplate; }
const std::string& Tokenizer::sourceName() const { return impl_->source; }

// ---- StreamDecoder -------------------------------------------------------------

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens)
    : tokenizer_(&tokenizer), skipSpecial_(skipSpecialTokens) {}

std::string StreamDecoder::push(std::int32_t id) {
    if (skipSpecial_ && tokenizer_->isSpecial(id)) return {};
    pending_ += tokenizer_->tokenBytes(id);
    const std::size_t n = unicode::utf8CompletePrefix(pending_);
    std::string out = unicode::utf8Lossy(std::string_view(pending_).substr(0, n));
    pending_.erase(0, n);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = unicode::utf8Lossy(pending_);
    pending_.clear();
    return out;
}

}  // namespace sdw
