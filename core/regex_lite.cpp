#include "core/regex_lite.h"

#include <memory>

namespace sdw {

namespace {

using Kind = RegexLite::NodeKind;

// A pattern as messages show it: one line (control bytes as \xHH), at most
// 200 bytes.
std::string printablePattern(std::string_view p) {
    std::string out;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const auto c = static_cast<unsigned char>(p[i]);
        if (out.size() >= 200 && (c & 0xC0) != 0x80) break;  // cut between code points
        if (c < 0x20 || c == 0x7F) {
            static const char* kHex = "0123456789ABCDEF";
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    if (out.size() >= 200) out += "...";  // (also after a pattern of exactly 200 bytes: harmless)
    return out;
}

char32_t foldCase(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';   // LATIN SMALL LETTER LONG S
    if (c == 0x212A) return 'k';  // KELVIN SIGN
    return c;
}

bool classContains(const RegexLite::CharClass& cc, char32_t c) {
    bool hit = false;
    for (const auto& [lo, hi] : cc.ranges)
        if (c >= lo && c <= hi) {
            hit = true;
            break;
        }
    if (!hit)
        for (const auto& [prop, neg] : cc.properties)
            if (unicode::hasProperty(c, prop) != neg) {
                hit = true;
                break;
            }
    return hit;
}

bool classMatchesSlow(const RegexLite::CharClass& cc, char32_t c) {
    bool hit = classContains(cc, c);
    if (!hit && cc.caseInsensitive) {
        const char32_t f = foldCase(c);
        if (f != c) hit = classContains(cc, f);
        if (!hit && f >= 'a' && f <= 'z') hit = classContains(cc, f - 32);
        if (!hit && f == 's') hit = classContains(cc, 0x17F);
        if (!hit && f == 'k') hit = classContains(cc, 0x212A);
    }
    return hit != cc.negated;
}

inline bool classMatches(const RegexLite::CharClass& cc, char32_t c) {
    if (c < 128) return (cc.ascii[c >> 6] >> (c & 63)) & 1;
    return classMatchesSlow(cc, c);
}

// ---- parsing ---------------------------------------------------------------

// Compiler limits: real pre-tokenizer patterns are a few hundred characters
// with groups two deep; the parser and the emitter recurse once per level.
constexpr std::size_t kMaxPatternLength = 16384;  // code points
constexpr std::size_t kMaxNesting = 64;           // groups and stacked quantifiers

struct Ast {
    enum class Type { Empty, Atom, Seq, Alt, Repeat, Look } type = Type::Empty;
    RegexLite::Node atom;  // Type::Atom: a Char/Any/Class/anchor node
    std::vector<std::unique_ptr<Ast>> children;
    int min = 0, max = -1;
    bool greedy = true;
    bool negative = false;
};

}  // namespace

class RegexCompiler {
public:
    RegexCompiler(RegexLite& re, std::u32string pattern) : re_(re), p_(std::move(pattern)) {}

    void compile() {
        auto ast = parseAlt(false);
        if (pos_ < p_.size()) fail("unbalanced ')'");
        re_.nodes_.push_back({});  // the final Accept
        const int accept = static_cast<int>(re_.nodes_.size()) - 1;
        re_.start_ = emit(*ast, accept);
        for (auto& cc : re_.classes_) {
            cc.ascii = {};
            for (char32_t c = 0; c < 128; ++c)
                if (classMatchesSlow(cc, c)) cc.ascii[c >> 6] |= std::uint64_t{1} << (c & 63);
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw RegexError("regex " + printablePattern(re_.pattern_) + ": " + what + " at position " + std::to_string(pos_));
    }
    bool atEnd() const { return pos_ >= p_.size(); }
    char32_t peek() const { return p_[pos_]; }
    bool accept(char32_t c) {
        if (!atEnd() && p_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    std::unique_ptr<Ast> parseAlt(bool inGroup) {
        std::vector<std::unique_ptr<Ast>> branches;
        const bool savedCi = ci_;
        branches.push_back(parseSeq(inGroup));
        while (accept('|')) branches.push_back(parseSeq(inGroup));
        ci_ = savedCi;  // an inline (?i) lasts until the end of its group
        if (branches.size() == 1) return std::move(branches[0]);
        auto a = std::make_unique<Ast>();
        a->type = Ast::Type::Alt;
        a->children = std::move(branches);
        return a;
    }

    std::unique_ptr<Ast> parseSeq(bool inGroup) {
        auto seq = std::make_unique<Ast>();
        seq->type = Ast::Type::Seq;
        while (!atEnd() && peek() != '|' && peek() != ')') {
            auto item = parseAtom();
            if (!item) continue;  // a flag group like (?i)
            item = parseQuantifier(std::move(item));
            seq->children.push_back(std::move(item));
        }
        if (!inGroup && !atEnd() && peek() == ')') fail("unbalanced ')'");
        return seq;
    }

    std::unique_ptr<Ast> parseQuantifier(std::unique_ptr<Ast> item) {
        for (std::size_t stacked = 0;; ++stacked) {
            int mn = 0, mx = -1;
            if (atEnd()) return item;
            const std::size_t save = pos_;
            if (accept('?')) {
                mn = 0;
                mx = 1;
            } else if (accept('*')) {
                mn = 0;
            } else if (accept('+')) {
                mn = 1;
            } else if (accept('{')) {
                auto number = [&]() -> int {
                    int v = -1;
                    while (!atEnd() && peek() >= '0' && peek() <= '9') {
                        v = (v < 0 ? 0 : v * 10) + static_cast<int>(peek() - '0');
                        if (v > 100000) fail("repetition count too large");
                        ++pos_;
                    }
                    return v;
                };
                mn = number();
                if (mn < 0) {  // not a quantifier: a literal '{'
                    pos_ = save;
                    return item;
                }
                mx = mn;
                if (accept(',')) mx = number();  // -1: unbounded
                if (!accept('}')) fail("malformed {n,m} quantifier");
                if (mx >= 0 && mx < mn) fail("{n,m} with m < n");
            } else {
                return item;
            }
            if (nesting_ + stacked >= kMaxNesting) fail("quantifiers nested deeper than " + std::to_string(kMaxNesting) + " levels");
            if (item->type == Ast::Type::Look || (item->type == Ast::Type::Atom && item->atom.kind != Kind::Char &&
                                                  item->atom.kind != Kind::Any && item->atom.kind != Kind::Class))
                fail("quantifier on an assertion");
            auto rep = std::make_unique<Ast>();
            rep->type = Ast::Type::Repeat;
            rep->min = mn;
            rep->max = mx;
            if (accept('?'))
                rep->greedy = false;
            else if (!atEnd() && peek() == '+')
                fail("possessive quantifiers are not supported");
            rep->children.push_back(std::move(item));
            item = std::move(rep);
        }
    }

    std::unique_ptr<Ast> atomOf(RegexLite::Node n) {
        auto a = std::make_unique<Ast>();
        a->type = Ast::Type::Atom;
        a->atom = std::move(n);
        return a;
    }

    std::unique_ptr<Ast> charAtom(char32_t c) {
        RegexLite::Node n;
        n.kind = Kind::Char;
        n.cp = c;
        n.caseInsensitive = ci_;
        return atomOf(std::move(n));
    }

    std::unique_ptr<Ast> classAtom(RegexLite::CharClass cc) {
        cc.caseInsensitive = ci_;
        re_.classes_.push_back(std::move(cc));
        RegexLite::Node n;
        n.kind = Kind::Class;
        n.cls = static_cast<int>(re_.classes_.size()) - 1;
        return atomOf(std::move(n));
    }

    std::unique_ptr<Ast> parseAtom() {
        const char32_t c = p_[pos_++];
        switch (c) {
            case '(': return parseGroup();
            case '[': return classAtom(parseClass());
            case '.': {
                RegexLite::Node n;
                n.kind = Kind::Any;
                return atomOf(std::move(n));
            }
            case '^': {
                RegexLite::Node n;
                n.kind = Kind::LineStart;
                return atomOf(std::move(n));
            }
            case '$': {
                RegexLite::Node n;
                n.kind = Kind::LineEnd;
                return atomOf(std::move(n));
            }
            case '\\': return parseEscapeAtom();
            case '*':
            case '+':
            case '?': --pos_; fail("quantifier without an operand");
            default: return charAtom(c);
        }
    }

    std::unique_ptr<Ast> parseGroup() {
        if (++nesting_ > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting) + " levels");
        struct Unnest {
            std::size_t& n;
            ~Unnest() { --n; }
        } unnest{nesting_};
        bool look = false, negative = false;
        const bool savedCi = ci_;
        if (accept('?')) {
            if (accept(':')) {
            } else if (accept('=')) {
                look = true;
            } else if (accept('!')) {
                look = negative = true;
            } else {
                // Flags: (?i) (?-i) (?i:...) ; other flags are rejected.
                bool on = true, any = false;
                while (!atEnd() && peek() != ':' && peek() != ')') {
                    const char32_t f = p_[pos_++];
                    if (f == '-') {
                        on = false;
                    } else if (f == 'i') {
                        ci_ = on;
                        any = true;
                    } else {
                        --pos_;
                        fail("unsupported group flag or construct");
                    }
                }
                if (!any) fail("unsupported group construct");
                if (accept(')')) return nullptr;  // applies to the rest of the enclosing group
                if (!accept(':')) fail("unterminated group");
            }
        }
        auto body = parseAlt(true);
        ci_ = savedCi;
        if (!accept(')')) fail("missing ')'");
        if (!look) return body;
        auto a = std::make_unique<Ast>();
        a->type = Ast::Type::Look;
        a->negative = negative;
        a->children.push_back(std::move(body));
        return a;
    }

    // Reads hex digits: \xHH, \x{H..}, \uHHHH.
    char32_t parseHex(std::size_t digits) {
        char32_t v = 0;
        auto hexval = [&](char32_t h) -> int {
            if (h >= '0' && h <= '9') return static_cast<int>(h - '0');
            if (h >= 'a' && h <= 'f') return static_cast<int>(h - 'a' + 10);
            if (h >= 'A' && h <= 'F') return static_cast<int>(h - 'A' + 10);
            return -1;
        };
        if (digits == 0) {  // braced
            if (!accept('{')) fail("malformed hex escape");
            std::size_t n = 0;
            while (!atEnd() && peek() != '}') {
                const int h = hexval(p_[pos_++]);
                if (h < 0 || ++n > 6) fail("malformed hex escape");
                v = v * 16 + static_cast<char32_t>(h);
            }
            if (!accept('}') || n == 0) fail("malformed hex escape");
        } else {
            for (std::size_t k = 0; k < digits; ++k) {
                if (atEnd()) fail("malformed hex escape");
                const int h = hexval(p_[pos_++]);
                if (h < 0) fail("malformed hex escape");
                v = v * 16 + static_cast<char32_t>(h);
            }
        }
        if (v > 0x10FFFF) fail("code point out of range");
        return v;
    }

    // \w: letters, marks, decimal digits and '_'.
    static void addWordChars(RegexLite::CharClass& cc) {
        cc.properties.push_back({unicode::Property::Letter, false});
        cc.properties.push_back({unicode::Property::Mark, false});
        cc.properties.push_back({unicode::Property::DecimalNumber, false});
        cc.ranges.push_back({'_', '_'});
    }

    // An escape that names a set (\s \d \w \p{..}) adds to `cc` and returns
    // true; a single-character escape sets `out` and returns false.
    bool parseEscape(RegexLite::CharClass& cc, char32_t& out) {
        if (atEnd()) fail("trailing backslash");
        const char32_t e = p_[pos_++];
        using unicode::Property;
        switch (e) {
            case 's': cc.properties.push_back({Property::WhiteSpace, false}); return true;
            case 'S': cc.properties.push_back({Property::WhiteSpace, true}); return true;
            case 'd': cc.properties.push_back({Property::DecimalNumber, false}); return true;
            case 'D': cc.properties.push_back({Property::DecimalNumber, true}); return true;
            case 'w': addWordChars(cc); return true;
            // \W inside a class is not a union of (property, negated) pairs;
            // standalone \W is handled by parseEscapeAtom.
            case 'W': fail("\\W inside a character class is not supported");
            case 'p':
            case 'P': {
                std::string name;
                if (accept('{')) {
                    while (!atEnd() && peek() != '}') {
                        if (p_[pos_] > 127) fail("bad property name");
                        name.push_back(static_cast<char>(p_[pos_++]));
                    }
                    if (!accept('}')) fail("unterminated \\p{");
                } else {
                    if (atEnd()) fail("malformed \\p");
                    name.push_back(static_cast<char>(p_[pos_++]));
                }
                bool neg = e == 'P';
                if (!name.empty() && name[0] == '^') {
                    neg = !neg;
                    name.erase(0, 1);
                }
                const auto prop = unicode::propertyByName(name);
                if (!prop) fail("unsupported Unicode property \\p{" + name + "}");
                cc.properties.push_back({*prop, neg});
                return true;
            }
            case 'r': out = '\r'; return false;
            case 'n': out = '\n'; return false;
            case 't': out = '\t'; return false;
            case 'f': out = '\f'; return false;
            case 'v': out = '\v'; return false;
            case 'a': out = 0x07; return false;
            case 'e': out = 0x1B; return false;
            case '0': out = 0; return false;
            case 'x': out = (!atEnd() && peek() == '{') ? parseHex(0) : parseHex(2); return false;
            case 'u': out = parseHex(4); return false;
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
                    fail(std::string("unsupported escape \\") + static_cast<char>(e));
                out = e;  // escaped punctuation or other literal
                return false;
        }
    }

    std::unique_ptr<Ast> parseEscapeAtom() {
        if (!atEnd() && (peek() == 'A' || peek() == 'z' || peek() == 'Z')) {
            RegexLite::Node n;
            n.kind = p_[pos_++] == 'A' ? Kind::TextStart : Kind::TextEnd;
            return atomOf(std::move(n));
        }
        if (accept('W')) {
            RegexLite::CharClass cc;
            addWordChars(cc);
            cc.negated = true;
            return classAtom(std::move(cc));
        }
        RegexLite::CharClass cc;
        char32_t c = 0;
        if (parseEscape(cc, c)) return classAtom(std::move(cc));
        return charAtom(c);
    }

    RegexLite::CharClass parseClass() {
        RegexLite::CharClass cc;
        if (accept('^')) cc.negated = true;
        bool first = true;
        for (;;) {
            if (atEnd()) fail("unterminated character class");
            char32_t c = p_[pos_];
            if (c == ']' && !first) {
                ++pos_;
                break;
            }
            first = false;
            ++pos_;
            if (c == '[') fail("nested character classes are not supported");
            if (c == '&' && !atEnd() && peek() == '&') fail("class intersection is not supported");
            if (c == '\\') {
                if (parseEscape(cc, c)) continue;
            }
            // A range a-b (a '-' before ']' is literal).
            if (!atEnd() && peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
                ++pos_;
                char32_t hi = p_[pos_++];
                if (hi == '\\') {
                    RegexLite::CharClass dummy;
                    if (parseEscape(dummy, hi)) fail("a class escape cannot end a range");
                }
                if (hi < c) fail("inverted range in character class");
                cc.ranges.push_back({c, hi});
            } else {
                cc.ranges.push_back({c, c});
            }
        }
        return cc;
    }

    // ---- emission ------------------------------------------------------------

    int addNode(RegexLite::Node n) {
        re_.nodes_.push_back(std::move(n));
        return static_cast<int>(re_.nodes_.size()) - 1;
    }

    int emit(const Ast& a, int next) {
        switch (a.type) {
            case Ast::Type::Empty: return next;
            case Ast::Type::Atom: {
                RegexLite::Node n = a.atom;
                n.next = next;
                return addNode(std::move(n));
            }
            case Ast::Type::Seq: {
                int cur = next;
                for (auto it = a.children.rbegin(); it != a.children.rend(); ++it) cur = emit(**it, cur);
                return cur;
            }
            case Ast::Type::Alt: {
                RegexLite::Node n;
                n.kind = Kind::Alt;
                for (const auto& b : a.children) n.branches.push_back(emit(*b, next));
                return addNode(std::move(n));
            }
            case Ast::Type::Look: {
                const int accept = addNode({});
                RegexLite::Node n;
                n.kind = Kind::Look;
                n.negative = a.negative;
                n.child = emit(*a.children[0], accept);
                n.next = next;
                return addNode(std::move(n));
            }
            case Ast::Type::Repeat: {
                const Ast& body = *a.children[0];
                RegexLite::Node n;
                n.min = a.min;
                n.max = a.max;
                n.greedy = a.greedy;
                n.next = next;
                if (body.type == Ast::Type::Atom) {
                    // Single-character body: matched by a loop, no recursion.
                    n.kind = Kind::RepeatAtom;
                    n.child = emit(body, -1);
                    return addNode(std::move(n));
                }
                n.kind = Kind::Repeat;
                const int rep = addNode(std::move(n));
                RegexLite::Node tail;
                tail.kind = Kind::RepeatTail;
                tail.child = rep;
                const int tailId = addNode(std::move(tail));
                const int body0 = emit(body, tailId);
                re_.nodes_[static_cast<std::size_t>(rep)].child = body0;
                return rep;
            }
        }
        return next;
    }

    RegexLite& re_;
    std::u32string p_;
    std::size_t pos_ = 0;
    std::size_t nesting_ = 0;  // groups open at pos_
    bool ci_ = false;
};

class RegexMatcher {
public:
    // One budget of steps for all the matches in `text` (see regex_lite.h).
    RegexMatcher(const RegexLite& re, std::u32string_view text)
        : re_(re), t_(text), budget_(RegexLite::kStepBudgetBase + RegexLite::kStepBudgetPerCodePoint * text.size()) {}

    bool matchAt(std::size_t pos, std::size_t& end) {
        frames_.clear();
        depth_ = 0;
        runDepth_ = 0;
        if (!run(re_.start_, pos)) return false;
        end = end_;
        return true;
    }

    std::size_t steps() const { return steps_; }

private:
    static constexpr std::size_t kMaxGroupIterations = 1000;
    // Nested run() calls (alternatives, backtracking points, lookarounds):
    // about 250 bytes of stack each (measured, -O2), so 10000 need some
    // 3 MB, within the 8 MB stacks of the main thread and worker threads.
    static constexpr std::size_t kMaxRecursion = 10000;

    void step(std::size_t n = 1) {
        steps_ += n;
        if (steps_ > budget_)
            throw RegexError("regex " + printablePattern(re_.pattern_) + ": matching a " + std::to_string(t_.size()) +
                             "-character text took more than " + std::to_string(budget_) +
                             " steps (catastrophic backtracking)");
    }

    struct Frame {
        int rep;
        int count;
        std::size_t start;
    };

    bool atomMatches(const RegexLite::Node& n, char32_t c) const {
        switch (n.kind) {
            case Kind::Char: return n.caseInsensitive ? foldCase(c) == foldCase(n.cp) : c == n.cp;
            case Kind::Any: return c != '\n';
            case Kind::Class: return classMatches(re_.classes_[static_cast<std::size_t>(n.cls)], c);
            default: return false;
        }
    }

    bool repeatStep(int rep, std::size_t pos, int count) {
        // Each iteration of a repeated group nests one level of recursion;
        // single-character repeats (all the known patterns use) loop instead.
        if (depth_ >= kMaxGroupIterations)
            throw RegexError("regex " + printablePattern(re_.pattern_) + ": a repeated group matched more than " +
                             std::to_string(kMaxGroupIterations) + " times");
        struct DepthGuard {
            std::size_t& d;
            explicit DepthGuard(std::size_t& v) : d(v) { ++d; }
            ~DepthGuard() { --d; }
        } guard(depth_);
        const auto& r = re_.nodes_[static_cast<std::size_t>(rep)];
        auto more = [&] {
            if (r.max >= 0 && count >= r.max) return false;
            frames_.push_back({rep, count + 1, pos});
            const bool ok = run(r.child, pos);
            frames_.pop_back();
            return ok;
        };
        auto done = [&] { return count >= r.min && run(r.next, pos); };
        return r.greedy ? (more() || done()) : (done() || more());
    }

    bool run(int id, std::size_t pos) {
        if (runDepth_ >= kMaxRecursion)
            throw RegexError("regex " + printablePattern(re_.pattern_) + ": matching nests deeper than " +
                             std::to_string(kMaxRecursion) + " backtracking points");
        struct DepthGuard {
            std::size_t& d;
            explicit DepthGuard(std::size_t& v) : d(v) { ++d; }
            ~DepthGuard() { --d; }
        } guard(runDepth_);
        for (;;) {
            step();
            const auto& n = re_.nodes_[static_cast<std::size_t>(id)];
            switch (n.kind) {
                case Kind::Accept: end_ = pos; return true;
                case Kind::Char:
                case Kind::Any:
                case Kind::Class:
                    if (pos < t_.size() && atomMatches(n, t_[pos])) {
                        ++pos;
                        id = n.next;
                        continue;
                    }
                    return false;
                case Kind::LineStart:
                    if (pos != 0 && t_[pos - 1] != '\n') return false;
                    id = n.next;
                    continue;
                case Kind::LineEnd:
                    if (pos != t_.size() && t_[pos] != '\n') return false;
                    id = n.next;
                    continue;
                case Kind::TextStart:
                    if (pos != 0) return false;
                    id = n.next;
                    continue;
                case Kind::TextEnd:
                    if (pos != t_.size()) return false;
                    id = n.next;
                    continue;
                case Kind::Alt:
                    for (int b : n.branches)
                        if (run(b, pos)) return true;
                    return false;
                case Kind::Look: {
                    const bool ok = run(n.child, pos);
                    if (ok == n.negative) return false;
                    id = n.next;
                    continue;
                }
                case Kind::RepeatAtom: {
                    const auto& atom = re_.nodes_[static_cast<std::size_t>(n.child)];
                    const std::size_t limit = n.max < 0 ? t_.size() - pos
                                                        : std::min<std::size_t>(static_cast<std::size_t>(n.max), t_.size() - pos);
                    const auto mn = static_cast<std::size_t>(n.min);
                    if (n.greedy) {
                        std::size_t k = 0;
                        while (k < limit && atomMatches(atom, t_[pos + k])) ++k;
                        step(k);
                        if (k < mn) return false;
                        for (std::size_t i = k;; --i) {
                            if (run(n.next, pos + i)) return true;
                            if (i == mn) return false;
                        }
                    }
                    for (std::size_t i = 0;; ++i) {
                        step();
                        if (i >= mn && run(n.next, pos + i)) return true;
                        if (i >= limit || !atomMatches(atom, t_[pos + i])) return false;
                    }
                }
                case Kind::Repeat: return repeatStep(id, pos, 0);
                case Kind::RepeatTail: {
                    const Frame f = frames_.back();
                    const auto& r = re_.nodes_[static_cast<std::size_t>(f.rep)];
                    if (pos == f.start && f.count > r.min) return false;  // empty iteration: stop looping
                    frames_.pop_back();
                    const bool ok = repeatStep(f.rep, pos, f.count);
                    frames_.push_back(f);
                    return ok;
                }
            }
        }
    }

    const RegexLite& re_;
    std::u32string_view t_;
    std::vector<Frame> frames_;
    std::size_t end_ = 0;
    std::size_t depth_ = 0;     // nested repeatStep calls
    std::size_t runDepth_ = 0;  // nested run calls
    std::size_t steps_ = 0;
    std::size_t budget_;
};

RegexLite::RegexLite(std::string_view pattern) : pattern_(pattern) {
    const auto decoded = unicode::decodeUtf8(pattern);
    if (decoded.codePoints.size() > kMaxPatternLength)
        throw RegexError("regex " + printablePattern(pattern_) + ": pattern longer than " +
                         std::to_string(kMaxPatternLength) + " characters");
    for (char32_t c : decoded.codePoints)
        if (c >= unicode::kInvalidByteBase) throw RegexError("regex " + printablePattern(pattern_) + ": pattern is not valid UTF-8");
    RegexCompiler(*this, decoded.codePoints).compile();
}

std::vector<std::pair<std::size_t, std::size_t>> RegexLite::findAll(std::u32string_view cps) const {
    std::size_t steps = 0;
    return findAll(cps, steps);
}

std::vector<std::pair<std::size_t, std::size_t>> RegexLite::findAll(std::u32string_view cps, std::size_t& steps) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    RegexMatcher m(*this, cps);
    std::size_t pos = 0;
    while (pos <= cps.size()) {
        std::size_t s = pos, end = 0;
        bool found = false;
        for (; s <= cps.size(); ++s)
            if (m.matchAt(s, end)) {
                found = true;
                break;
            }
        if (!found) break;
        if (end > s) {
            out.emplace_back(s, end);
            pos = end;
        } else {
            pos = s + 1;  // empty match: not a piece
        }
    }
    steps = m.steps();
    return out;
}

std::vector<std::pair<std::size_t, std::size_t>> RegexLite::findAll(std::string_view text) const {
    const auto d = unicode::decodeUtf8(text);
    auto matches = findAll(std::u32string_view(d.codePoints));
    for (auto& [b, e] : matches) {
        b = d.offsets[b];
        e = d.offsets[e];
    }
    return matches;
}

std::vector<std::string_view> RegexLite::splitIsolated(std::string_view text) const {
    std::vector<std::string_view> pieces;
    std::size_t last = 0;
    for (const auto& [b, e] : findAll(text)) {
        if (b > last) pieces.push_back(text.substr(last, b - last));
        pieces.push_back(text.substr(b, e - b));
        last = e;
    }
    if (last < text.size()) pieces.push_back(text.substr(last));
    return pieces;
}

}  // namespace sdw
