#include "core/tokenizer.h"

#include "core/json_limits.h"
#include "core/tokenizer_impl.h"
#include "core/unicode.h"

#include <algorithm>
#include <fstream>
#include <queue>
#include <sstream>

namespace sdw {

using namespace tokenizer_detail;

namespace {

// The first / last code point of UTF-8 text (an invalid byte decodes outside Unicode).
char32_t firstCodePoint(std::string_view s) {
    const auto d = unicode::decodeUtf8(s.substr(0, std::min<std::size_t>(4, s.size())));
    return d.codePoints.empty() ? 0 : d.codePoints.front();
}
std::size_t lastCodePointStart(std::string_view s) {
    std::size_t i = s.size() - 1;
    for (int k = 0; k < 3 && i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; ++k) --i;
    return i;
}
char32_t lastCodePoint(std::string_view s) { return firstCodePoint(s.substr(lastCodePointStart(s))); }

bool isSpace(char32_t cp) { return unicode::hasProperty(cp, unicode::Property::WhiteSpace); }
// Rust regex's \w, near enough: letters, marks, decimal digits, connector "_" and the joiners.
bool isWordChar(char32_t cp) {
    using unicode::Property;
    return cp == U'_' || cp == 0x200C || cp == 0x200D || unicode::hasProperty(cp, Property::Letter) ||
           unicode::hasProperty(cp, Property::Mark) || unicode::hasProperty(cp, Property::DecimalNumber);
}

// Length of the white space at the start of s.
std::size_t leadingSpace(std::string_view s) {
    std::size_t n = 0;
    while (n < s.size()) {
        const auto d = unicode::decodeUtf8(s.substr(n, std::min<std::size_t>(4, s.size() - n)));
        if (d.codePoints.empty() || !isSpace(d.codePoints.front())) break;
        n += d.offsets[1];
    }
    return n;
}
// Where the white space at the end of s begins.
std::size_t trailingSpaceStart(std::string_view s) {
    std::size_t n = s.size();
    while (n > 0) {
        const std::size_t b = lastCodePointStart(s.substr(0, n));
        if (!isSpace(firstCodePoint(s.substr(b, n - b)))) break;
        n = b;
    }
    return n;
}

struct Span {
    std::size_t b, e;
    bool match;
};

// Matches plus the gaps between them, covering [0, size).
std::vector<Span> cover(const std::vector<std::pair<std::size_t, std::size_t>>& matches, std::size_t size,
                        bool invert) {
    std::vector<Span> spans;
    std::size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (b == e) continue;  // an empty match splits nothing
        if (prev < b) spans.push_back({prev, b, invert});
        spans.push_back({b, e, !invert});
        prev = e;
    }
    if (prev < size) spans.push_back({prev, size, invert});
    return spans;
}

// The reference's NormalizedString::split: which spans become pieces.
std::vector<std::pair<std::size_t, std::size_t>> splitSpans(const std::vector<Span>& spans,
                                                            Tokenizer::Impl::Behavior behavior) {
    using B = Tokenizer::Impl::Behavior;
    std::vector<std::pair<std::size_t, std::size_t>> out;
    bool prev = false;
    switch (behavior) {
    case B::Isolated:
        for (const auto& s : spans) out.emplace_back(s.b, s.e);
        break;
    case B::Removed:
        for (const auto& s : spans)
            if (!s.match) out.emplace_back(s.b, s.e);
        break;
    case B::Contiguous:
        for (const auto& s : spans) {
            if (!out.empty() && s.match == prev) out.back().second = s.e;
            else out.emplace_back(s.b, s.e);
            prev = s.match;
        }
        break;
    case B::MergedWithPrevious:
        for (const auto& s : spans) {
            if (!out.empty() && s.match && !prev) out.back().second = s.e;
            else out.emplace_back(s.b, s.e);
            prev = s.match;
        }
        break;
    case B::MergedWithNext:
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
            if (!out.empty() && it->match && !prev) out.back().first = it->b;
            else out.emplace_back(it->b, it->e);
            prev = it->match;
        }
        std::reverse(out.begin(), out.end());
        break;
    }
    return out;
}

void appendPieces(const std::string& text, bool atStart, const std::vector<std::pair<std::size_t, std::size_t>>& parts,
                  std::vector<Tokenizer::Impl::Piece>& out) {
    for (const auto& [b, e] : parts)
        if (e > b) out.push_back({text.substr(b, e - b), atStart && b == 0});
}

}  // namespace

std::string Tokenizer::Impl::normalize(std::string_view text) const {
    std::string s(text);
    for (const auto& step : normalizers) {
        switch (step.kind) {
        case NormalizerStep::Kind::Nfc:
            s = unicode::nfc(s);
            break;
        case NormalizerStep::Kind::Nfkc:
            s = unicode::nfkc(s);
            break;
        case NormalizerStep::Kind::Prepend:
            if (!s.empty()) s.insert(0, step.text);
            break;
        case NormalizerStep::Kind::Replace:
            s = replaceAll(s, step.text, step.replacement);
            break;
        case NormalizerStep::Kind::Strip:
            if (step.right) s.erase(trailingSpaceStart(s));
            if (step.left) s.erase(0, leadingSpace(s));
            break;
        }
    }
    return s;
}

std::vector<Tokenizer::Impl::Piece> Tokenizer::Impl::preTokenize(std::string_view text, bool atStart) const {
    try {
        return preTokenizeSteps(text, atStart);
    } catch (const RegexError& e) {
        // A pattern that backtracks without end on this text (core/split_regex.h).
        fail(std::string("pre_tokenizer: ") + e.what());
    }
}

std::vector<Tokenizer::Impl::Piece> Tokenizer::Impl::preTokenizeSteps(std::string_view text, bool atStart) const {
    std::vector<Piece> pieces;
    if (!text.empty()) pieces.push_back({std::string(text), atStart});
    for (const auto& step : preSteps) {
        std::vector<Piece> next;
        next.reserve(pieces.size() * 2);
        for (auto& p : pieces) {
            switch (step.kind) {
            case PreStep::Kind::Split:
                appendPieces(p.text, p.atStart, splitSpans(cover(step.regex->findAll(p.text), p.text.size(), step.invert), step.behavior), next);
                break;
            case PreStep::Kind::ByteLevel: {
                if (step.addPrefixSpace && p.text[0] != ' ') p.text.insert(p.text.begin(), ' ');
                if (!step.regex) {
                    next.push_back(std::move(p));
                    break;
                }
                std::vector<std::pair<std::size_t, std::size_t>> parts;
                for (auto sv : step.regex->splitIsolated(p.text))
                    parts.emplace_back(static_cast<std::size_t>(sv.data() - p.text.data()),
                                       static_cast<std::size_t>(sv.data() - p.text.data()) + sv.size());
                appendPieces(p.text, p.atStart, parts, next);
                break;
            }
            case PreStep::Kind::Metaspace: {
                const std::string& rep = step.meta.replacement;
                std::string s = replaceAll(p.text, " ", rep);
                const bool prepend = step.meta.prepend == Metaspace::Prepend::Always ||
                                     (step.meta.prepend == Metaspace::Prepend::First && p.atStart);
                if (prepend && s.compare(0, rep.size(), rep) != 0) s.insert(0, rep);
                if (!step.meta.split) {
                    next.push_back({std::move(s), p.atStart});
                    break;
                }
                // Split before every replacement character, keeping it with what follows.
                std::vector<std::pair<std::size_t, std::size_t>> hits;
                for (std::size_t h = s.find(rep); h != std::string::npos; h = s.find(rep, h + rep.size()))
                    hits.emplace_back(h, h + rep.size());
                appendPieces(s, p.atStart, splitSpans(cover(hits, s.size(), false), Behavior::MergedWithNext), next);
                break;
            }
            }
        }
        pieces = std::move(next);
    }
    return pieces;
}

std::vector<Tokenizer::Impl::Segment> Tokenizer::Impl::splitAdded(const Matcher& m, std::string_view text) const {
    std::vector<Segment> out;
    std::size_t segStart = 0, i = 0;
    while (i < text.size()) {
        // The longest added token starting at i.
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
        const auto& tok = added[static_cast<std::size_t>(best)];
        std::size_t start = i, stop = bestEnd;
        i = bestEnd;  // the search goes on after this match even when it is dropped
        if (tok.singleWord && ((start > 0 && isWordChar(lastCodePoint(text.substr(0, start)))) ||
                               (stop < text.size() && isWordChar(firstCodePoint(text.substr(stop))))))
            continue;
        if (tok.lstrip) start = std::max(trailingSpaceStart(text.substr(0, start)), segStart);
        if (tok.rstrip) stop += leadingSpace(text.substr(stop));
        if (segStart < start) out.push_back({segStart, start, -1});
        out.push_back({start, stop, tok.id});
        segStart = stop;
        i = std::max(i, stop);
    }
    if (segStart < text.size()) out.push_back({segStart, text.size(), -1});
    return out;
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
    const std::string n = normalize(text);
    if (normalizedMatcher.empty()) {
        for (const auto& piece : preTokenize(n, atStart)) bpe(piece.text, out);
        return;
    }
    for (const auto& seg : splitAdded(normalizedMatcher, n)) {
        if (seg.id >= 0) {
            out.push_back(seg.id);
            continue;
        }
        const auto part = std::string_view(n).substr(seg.begin, seg.end - seg.begin);
        for (const auto& piece : preTokenize(part, atStart && seg.begin == 0)) bpe(piece.text, out);
    }
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
        root = parseJsonBounded(text, impl->source, kTokenizerJsonLimits);
    } catch (const JsonInputError& e) {
        throw TokenizerError(e.what());  // names the source already
    }
    try {
        impl->load(root);
    } catch (const json::exception& e) {
        impl->fail(std::string("unexpected structure: ") + e.what());
    }
    return impl;
}

std::string readFile(const std::filesystem::path& path) {
    try {
        return readFileBounded(path, kTokenizerJsonLimits.maxBytes);
    } catch (const JsonInputError& e) {
        throw TokenizerError(e.what());
    }
}

}  // namespace

Tokenizer Tokenizer::fromJson(std::string_view jsonText, std::string sourceName) {
    return Tokenizer(parseTokenizer(jsonText, std::move(sourceName)));
}

Tokenizer Tokenizer::fromFile(const std::filesystem::path& tokenizerJson) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(tokenizerJson, ec))
        throw TokenizerError(tokenizerJson.string() + ": no such file");
    auto impl = parseTokenizer(readFile(tokenizerJson), tokenizerJson.string());
    const auto configPath = tokenizerJson.parent_path() / "tokenizer_config.json";
    if (std::filesystem::is_regular_file(configPath, ec)) {
        try {
            impl->loadConfig(readJsonFileBounded(configPath));
        } catch (const JsonInputError& e) {
            throw TokenizerError(e.what());
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

    // Added tokens matched on raw text come out first: leftmost match, longest at that position.
    for (const auto& seg : m.splitAdded(m.rawMatcher, text)) {
        if (seg.id >= 0) out.push_back(seg.id);
        else m.encodeText(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0, out);
    }

    if (addSpecialTokens) out.insert(out.end(), m.suffixIds.begin(), m.suffixIds.end());
    return out;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecialTokens) const {
    const Impl& m = *impl_;
    std::string bytes, run;
    // ByteFallback: a run of "<0xXX>" tokens is its bytes if they are valid
    // UTF-8, else one U+FFFD per byte (the reference's rule).
    auto endRun = [&] {
        if (unicode::utf8Lossy(run) == run) {
            bytes += run;
        } else {
            for (std::size_t k = 0; k < run.size(); ++k) bytes += "\xEF\xBF\xBD";
        }
        run.clear();
    };
    for (std::int32_t id : ids) {
        if (skipSpecialTokens && isSpecial(id)) continue;
        if (id >= 0 && static_cast<std::size_t>(id) < m.isByteToken.size() && m.isByteToken[static_cast<std::size_t>(id)]) {
            run += tokenBytes(id);
            continue;
        }
        if (!run.empty()) endRun();
        bytes += tokenBytes(id);
    }
    if (!run.empty()) endRun();
    // Strip: up to stripStart copies of the content at the front, stripStop at the back.
    const std::string& c = m.stripContent;
    std::size_t begin = 0, end = bytes.size();
    for (std::size_t k = 0; k < m.stripStart && end - begin >= c.size() && bytes.compare(begin, c.size(), c) == 0; ++k)
        begin += c.size();
    for (std::size_t k = 0; k < m.stripStop && end - begin >= c.size() && bytes.compare(end - c.size(), c.size(), c) == 0; ++k)
        end -= c.size();
    return unicode::utf8Lossy(std::string_view(bytes).substr(begin, end - begin));
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
    // Turn and text ends of the chat families, when they are special tokens
    // (an ordinary vocabulary entry with such a spelling is text).
    for (std::string_view name : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|endoftext|>", "<end_of_turn>"})
        if (const auto id = impl_->find(name); id && isSpecial(*id)) add(id);
    return ids;
}

std::size_t Tokenizer::leadingSpacesDropped() const { return impl_->stripContent == " " ? impl_->stripStart : 0; }
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
