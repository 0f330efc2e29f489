#include "core/tokenizer.h"

#include "core/tokenizer_impl.h"
#include "core/unicode.h"

#include <algorithm>
#include <fstream>
#include <queue>
#include <sstream>

namespace sdw {

using namespace tokenizer_detail;

std::string Tokenizer::Impl::normalize(std::string_view text) const {
    std::string s(text);
    for (const auto& step : normalizers) {
        switch (step.kind) {
        case NormalizerStep::Kind::Nfc:
            s = unicode::nfc(s);
            break;
        case NormalizerStep::Kind::Prepend:
            if (!s.empty()) s.insert(0, step.text);
            break;
        case NormalizerStep::Kind::Replace:
            s = replaceAll(s, step.text, step.replacement);
            break;
        }
    }
    return s;
}

std::vector<std::string> Tokenizer::Impl::preTokenize(std::string_view text, bool atStart) const {
    if (metaspace) {
        const std::string& rep = metaspace->replacement;
        std::string s;
        for (char c : text) {
            if (c == ' ') s += rep;
            else s.push_back(c);
        }
        const bool prepend = metaspace->prepend == Metaspace::Prepend::Always ||
                             (metaspace->prepend == Metaspace::Prepend::First && atStart);
        if (prepend && s.compare(0, rep.size(), rep) != 0) s.insert(0, rep);
        if (!metaspace->split) return {s};
        // Split before every replacement character, keeping it with what follows.
        std::vector<std::string> pieces;
        std::size_t start = 0;
        for (std::size_t hit = s.find(rep, 1); hit != std::string::npos; hit = s.find(rep, hit + rep.size())) {
            pieces.push_back(s.substr(start, hit - start));
            start = hit;
        }
        pieces.push_back(s.substr(start));
        return pieces;
    }
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

void Tokenizer::Impl::initialSymbols(std::string_view piece, std::vector<std::int32_t>& ids) const {
    if (byteLevel) {
        for (char c : piece) {
            const std::int32_t id = byteId[static_cast<unsigned char>(c)];
            if (id >= 0) ids.push_back(id);
            else if (unkId) ids.push_back(*unkId);  // without an unk token, as the reference: dropped
        }
        return;
    }
    // SentencePiece-style: one symbol per character; a character outside the
    // vocabulary becomes its UTF-8 bytes ("<0xXX>") or the unknown token.
    bool lastUnk = false;
    std::size_t i = 0;
    while (i < piece.size()) {
        const auto lead = static_cast<unsigned char>(piece[i]);
        std::size_t len = lead < 0x80 ? 1 : lead >> 5 == 0x6 ? 2 : lead >> 4 == 0xE ? 3 : lead >> 3 == 0x1E ? 4 : 1;
        len = std::min(len, piece.size() - i);
        const std::string_view ch = piece.substr(i, len);
        i += len;
        if (const auto id = find(ch)) {
            ids.push_back(*id);
            lastUnk = false;
            continue;
        }
        bool bytesOk = byteFallback;
        for (std::size_t k = 0; bytesOk && k < ch.size(); ++k)
            bytesOk = byteFallbackId[static_cast<unsigned char>(ch[k])] >= 0;
        if (bytesOk) {
            for (char b : ch) ids.push_back(byteFallbackId[static_cast<unsigned char>(b)]);
            lastUnk = false;
        } else if (unkId) {
            if (!(fuseUnk && lastUnk)) ids.push_back(*unkId);
            lastUnk = true;
        }
    }
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
    std::vector<std::int32_t> first;
    initialSymbols(piece, first);
    std::vector<Symbol> sym;
    sym.reserve(first.size());
    for (const std::int32_t id : first) {
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

    if (piece.size() > 256) return;  // a whole SentencePiece text: not worth keeping
    std::lock_guard lock(cacheMutex);
    if (cache.size() >= 200'000) cache.clear();  // bounded; pieces repeat a lot in practice
    cache.emplace(std::string(piece), std::move(ids));
}

void Tokenizer::Impl::encodeText(std::string_view text, bool atStart, std::vector<std::int32_t>& out) const {
    if (text.empty()) return;
    for (const auto& piece : preTokenize(normalize(text), atStart)) bpe(piece, out);
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
        m.encodeText(text.substr(segStart, segEnd - segStart), segStart == 0, out);
        out.push_back(tok.id);
        segStart = i = bestEnd;
    }
    m.encodeText(text.substr(segStart), segStart == 0, out);

    if (addSpecialTokens) out.insert(out.end(), m.suffixIds.begin(), m.suffixIds.end());
    return out;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecialTokens) const {
    std::string bytes;
    for (std::int32_t id : ids) {
        if (skipSpecialTokens && isSpecial(id)) continue;
        bytes += tokenBytes(id);
    }
    std::size_t strip = 0;
    while (strip < impl_->stripLeadingSpaces && strip < bytes.size() && bytes[strip] == ' ') ++strip;
    return unicode::utf8Lossy(std::string_view(bytes).substr(strip));
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

std::size_t Tokenizer::leadingSpacesDropped() const { return impl_->stripLeadingSpaces; }
bool Tokenizer::isByteLevel() const { return impl_->byteLevel; }

const std::string& Tokenizer::chatTemplate() const { return impl_->chatTemplate; }
const std::string& Tokenizer::sourceName() const { return impl_->source; }

// ---- StreamDecoder -------------------------------------------------------------

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens)
    : tokenizer_(&tokenizer), skipSpecial_(skipSpecialTokens), stripLeft_(tokenizer.leadingSpacesDropped()) {}

std::string StreamDecoder::push(std::int32_t id) {
    if (skipSpecial_ && tokenizer_->isSpecial(id)) return {};
    pending_ += tokenizer_->tokenBytes(id);
    while (stripLeft_ > 0 && !pending_.empty()) {
        if (pending_[0] != ' ') {
            stripLeft_ = 0;
            break;
        }
        pending_.erase(0, 1);
        --stripLeft_;
    }
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
