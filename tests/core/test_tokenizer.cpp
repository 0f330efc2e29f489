// Tokenizer, pre-tokenizer regexes (Oniguruma), NFC, streaming decode and chat
// formatting. Hand-made fixtures always run; the golden cases from
// tests/data/tokenizer/<name>/ (made with the reference `tokenizers`
// library) run when those files are present.

#include "core/chat_format.h"
#include "core/split_regex.h"
#include "core/tokenizer.h"
#include "core/unicode.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

using json = nlohmann::json;

namespace {

const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's byte -> character map, written out independently of the library.
std::string byteChar(int b) {
    int cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
        int n = 0;
        for (int k = 0; k < b; ++k)
            if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) ++n;
        cp = 256 + n;
    }
    std::string s;
    sdw::unicode::appendUtf8(s, static_cast<char32_t>(cp));
    return s;
}

// A tiny byte-level BPE: ids 0..255 are the bytes, then merges building
// "hello" and " world", one merge for the first two bytes of an emoji,
// and four added tokens.
json tinyTokenizerJson() {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[byteChar(b)] = b;
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {byteChar(' '), "w"}, {"o", "r"},
        {byteChar(' ') + "w", "or"}, {"l", "d"}, {byteChar(' ') + "wor", "ld"}, {byteChar(0xF0), byteChar(0x9F)},
    };
    json mergeList = json::array();
    int id = 256;
    for (const auto& [a, b] : merges) {
        vocab[a + b] = id++;
        mergeList.push_back(a + " " + b);
    }
    json added = json::array();
    auto addToken = [&](const std::string& content, int tokId, bool special) {
        added.push_back({{"id", tokId}, {"content", content}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", special}});
    };
    addToken("<|endoftext|>", 266, true);
    addToken("<|im_start|>", 267, true);
    addToken("<|im_end|>", 268, true);
    addToken("<tool>", 269, false);
    return {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
        {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false},
                   {"byte_fallback", false}, {"vocab", vocab}, {"merges", mergeList}}},
    };
}

sdw::Tokenizer tinyTokenizer() { return sdw::Tokenizer::fromJson(tinyTokenizerJson().dump(), "tiny"); }

// A tiny SentencePiece-style BPE in the Llama-2 layout: <unk> <s> </s>, the
// 256 "<0xXX>" byte tokens (ids 3..258), "▁" 259, "a" 260, "b" 261, "c" 262,
// then "▁a" 263, "ab" 264, "▁ab" 265 by three merges.
const std::string kU2581 = "\xE2\x96\x81";
json spTokenizerJson() {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 3 + b;
    }
    const std::string u = kU2581;
    for (const auto& [t, id] : std::vector<std::pair<std::string, int>>{
             {u, 259}, {"a", 260}, {"b", 261}, {"c", 262}, {u + "a", 263}, {"ab", 264}, {u + "ab", 265}})
        vocab[t] = id;
    json added = json::array();
    int id = 0;
    for (const char* t : {"<unk>", "<s>", "</s>"})
        added.push_back({{"id", id++}, {"content", t}, {"special", true}, {"normalized", false}});
    return {{"model",
             {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}, {"vocab", vocab},
              {"merges", {u + " a", "a b", u + "a b"}}}},
            {"added_tokens", added},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers", {{{"type", "Prepend"}, {"prepend", u}},
                               {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", u}}}}}},
            {"pre_tokenizer", nullptr},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", u}}}, {"content", " "}},
                            {{"type", "ByteFallback"}},
                            {{"type", "Fuse"}},
                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}}};
}

// The same vocabulary in Gemma's layout: spaces become "▁" with nothing
// prepended, a Split on " " that finds none, and no Strip when decoding.
json spGemmaJson() {
    auto j = spTokenizerJson();
    j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kU2581}};
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}};
    j["decoder"]["decoders"].erase(3);
    return j;
}

std::vector<std::string> pieces(const char* pattern, std::string_view text) {
    const sdw::Regex re(pattern);
    std::vector<std::string> out;
    for (auto p : re.splitIsolated(text)) out.emplace_back(p);
    return out;
}

using Ids = std::vector<std::int32_t>;

QString show(const std::vector<std::string>& v) {
    QStringList l;
    for (const auto& s : v) l << QString::fromUtf8(QByteArray::fromStdString(s).toPercentEncoding(" "));
    return l.join(QStringLiteral(" | "));
}

QString show(const Ids& v) {
    QStringList l;
    for (auto i : v) l << QString::number(i);
    return l.join(QStringLiteral(","));
}

std::string readAll(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeFile(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

std::filesystem::path goldenRoot() { return std::filesystem::path(SDW_SOURCE_DIR) / "tests/data/tokenizer"; }

std::vector<std::filesystem::path> goldenDirs() {
    std::vector<std::filesystem::path> dirs;
    std::error_code ec;
    for (const char* name : {"llama3", "qwen2", "stories260K", "stories260K-metaspace"}) {
        const auto d = goldenRoot() / name;
        if (std::filesystem::is_regular_file(d / "tokenizer.json", ec) && std::filesystem::is_regular_file(d / "cases.json", ec))
            dirs.push_back(d);
    }
    return dirs;
}

// This thread's CPU time in seconds (the bounded-work checks below: immune to other load).
double cpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

Q_DECLARE_METATYPE(std::string)
Q_DECLARE_METATYPE(std::vector<std::string>)

class TestTokenizer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---- regex engine ---------------------------------------------------------

    void regexPieces_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        const QString llama = QString::fromUtf8(kLlama3Pattern), qwen = QString::fromUtf8(kQwen2Pattern),
                      gpt2 = QString::fromUtf8(kGpt2Pattern);
        const QString mixed = QStringLiteral("Hello world's 12345  \n\n  x");
        QTest::newRow("llama3 mixed") << llama << mixed
                                      << QStringList{"Hello", " world", "'s", " ", "123", "45", "  \n\n", " ", " x"};
        QTest::newRow("qwen2 mixed") << qwen << mixed
                                     << QStringList{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", "  \n\n", " ", " x"};
        QTest::newRow("gpt2 mixed") << gpt2 << mixed << QStringList{"Hello", " world", "'s", " 12345", "  \n\n ", " x"};
        QTest::newRow("llama3 case-insensitive contraction") << llama << QStringLiteral("I'M WE'LL")
                                                             << QStringList{"I", "'M", " WE", "'LL"};
        QTest::newRow("gpt2 case-sensitive contraction") << gpt2 << QStringLiteral("I'M") << QStringList{"I", "'", "M"};
        QTest::newRow("llama3 tab prefix") << llama << QStringLiteral("a\tb") << QStringList{"a", "\tb"};
        QTest::newRow("gpt2 tab") << gpt2 << QStringLiteral("a\tb") << QStringList{"a", "\t", "b"};
        QTest::newRow("llama3 punctuation then newlines") << llama << QStringLiteral("x.)\r\n\ny")
                                                          << QStringList{"x", ".)\r\n\n", "y"};
        QTest::newRow("llama3 CJK run") << llama << QStringLiteral("日本語のテキスト。次")
                                        << QStringList{"日本語のテキスト", "。次"};
        QTest::newRow("llama3 combining mark") << llama << QStringLiteral("cafe\u0301 ok")
                                               << QStringList{"cafe", "\u0301", " ok"};
        QTest::newRow("llama3 digits 7") << llama << QStringLiteral("1234567") << QStringList{"123", "456", "7"};
        QTest::newRow("llama3 trailing spaces") << llama << QStringLiteral("a   ") << QStringList{"a", "   "};
        QTest::newRow("llama3 no-break space is \\s") << llama << QStringLiteral("a\u00A0\u00A0b")
                                                      << QStringList{"a", "\u00A0", "\u00A0b"};
        QTest::newRow("llama3 emoji") << llama << QStringLiteral("hi 👋🏽!") << QStringList{"hi", " 👋🏽!"};
        QTest::newRow("qwen2 arabic digits") << qwen << QStringLiteral("٣٤") << QStringList{"٣", "٤"};
        QTest::newRow("empty") << llama << QString() << QStringList{};
    }
    void regexPieces() {
        QFETCH(QString, pattern);
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        const auto got = pieces(pattern.toStdString().c_str(), text.toStdString());
        QStringList gotList;
        for (const auto& s : got) gotList << QString::fromStdString(s);
        QCOMPARE(gotList, expected);
    }

    void regexFeatures() {
        using Matches = std::vector<std::pair<std::size_t, std::size_t>>;
        QCOMPARE(sdw::Regex("a{2,3}").findAll(std::string_view("aaaaaaa")), (Matches{{0, 3}, {3, 6}}));  // one 'a' is left
        QCOMPARE(sdw::Regex("(?:ab)+c").findAll(std::string_view("xababcab")), (Matches{{1, 6}}));
        QCOMPARE(sdw::Regex("a+?b").findAll(std::string_view("aaab")), (Matches{{0, 4}}));
        QCOMPARE(sdw::Regex("x(?=y)").findAll(std::string_view("xzxy")), (Matches{{2, 3}}));
        QCOMPARE(sdw::Regex(R"([a-c\d]+)").findAll(std::string_view("zzab1c2z")), (Matches{{2, 7}}));
        QCOMPARE(sdw::Regex(R"(\x41\u00e9)").findAll(std::string_view("A\xC3\xA9")), (Matches{{0, 3}}));
        // Alternation: the leftmost alternative wins, not the longest.
        QCOMPARE(sdw::Regex("a|ab").findAll(std::string_view("ab")), (Matches{{0, 1}}));
        // A group repeated thousands of times (Oniguruma's backtracking stack
        // lives on the heap: no recursion limit).
        std::string abs;
        for (int i = 0; i < 3000; ++i) abs += "ab";
        QCOMPARE(sdw::Regex("(?:ab)+").findAll(std::string_view(abs)), (Matches{{0, 6000}}));
        // Quantified group with alternation and backtracking into it.
        QCOMPARE(sdw::Regex("(?:a|ab)*c").findAll(std::string_view("abac")), (Matches{{0, 4}}));
        // Empty matches split nothing.
        QCOMPARE(sdw::Regex("x*").findAll(std::string_view("axxb")), (Matches{{1, 3}}));
        // Oniguruma's syntax beyond what the real files use: lookbehind,
        // possessive quantifiers, scripts, nested classes, backreferences.
        QCOMPARE(sdw::Regex("(?<=a)b").findAll(std::string_view("abb")), (Matches{{1, 2}}));
        QCOMPARE(sdw::Regex("a++a").findAll(std::string_view("aaa")), Matches{});
        QCOMPARE(sdw::Regex(R"(\p{Greek}+)").findAll(std::string_view("x\xCE\xB1\xCE\xB2y")), (Matches{{1, 5}}));
        QCOMPARE(sdw::Regex("[[a-c]&&[b-d]]+").findAll(std::string_view("abcd")), (Matches{{1, 3}}));
        QCOMPARE(sdw::Regex(R"((a)\1)").findAll(std::string_view("aaa")), (Matches{{0, 2}}));
    }

    void regexInvalidBytesAreOther() {
        // Each invalid byte is its own character, outside every property.
        const auto got = pieces(kLlama3Pattern, std::string_view("ab\xFF\xFE" "cd", 6));
        QCOMPARE(got, (std::vector<std::string>{"ab", "\xFF\xFE", "cd"}));
        const sdw::Regex notSpace(R"(\S+)");
        QCOMPARE(notSpace.findAll(std::string_view("\x80 \xC3", 3)),
                 (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {2, 3}}));
        // A truncated sequence, a surrogate and an overlong form: one character per byte.
        QCOMPARE(sdw::Regex(".").findAll(std::string_view("\xE2\x82\xED\xA0\x80\xC0\xAF", 7)).size(), std::size_t{7});
        QCOMPARE(sdw::Regex(R"(\p{L}+)").findAll(std::string_view("a\xFF" "b\xC3\xA9", 5)),
                 (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {2, 5}}));
    }

    void regexRejectsInvalid_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown property") << R"(\p{Foo})" << "invalid character property name {Foo}";
        QTest::newRow("unbalanced") << "(ab" << "end pattern with unmatched parenthesis";
        QTest::newRow("stray paren") << "ab)" << "unmatched close parenthesis";
        QTest::newRow("dangling quantifier") << "*a" << "target of repeat operator is not specified";
        QTest::newRow("backreference to nothing") << R"((a)\2)" << "invalid backref number";
    }
    void regexRejectsInvalid() {
        QFETCH(QString, pattern);
        QFETCH(QString, mentions);
        try {
            sdw::Regex re(pattern.toStdString());
            QFAIL("expected RegexError");
        } catch (const sdw::RegexError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("regex ")), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
        }
    }

    // Compiling (Oniguruma's set-up included) and matching from several
    // threads at once, one compiled pattern shared: the same pieces as alone.
    void regexThreads() {
        const std::string text = "Hello world's 12345  \n\n  x \xE6\x97\xA5\xE6\x9C\xAC \xFF tail";
        const auto alone = sdw::Regex(kLlama3Pattern).findAll(text);
        const sdw::Regex shared(kQwen2Pattern);
        const auto sharedAlone = shared.findAll(text);
        std::vector<std::thread> threads;
        std::atomic<int> mismatches{0};
        for (int t = 0; t < 8; ++t)
            threads.emplace_back([&] {
                for (int i = 0; i < 200; ++i) {
                    if (sdw::Regex(kLlama3Pattern).findAll(text) != alone) ++mismatches;
                    if (shared.findAll(text) != sharedAlone) ++mismatches;
                }
            });
        for (auto& t : threads) t.join();
        QCOMPARE(mismatches.load(), 0);
    }

    void regexRejectsInvalidUtf8() {
        QVERIFY_THROWS_EXCEPTION(sdw::RegexError, sdw::Regex(std::string_view("a\xFF", 2)));
    }

    // ---- unicode ----------------------------------------------------------------

    void unicodeProperties() {
        using sdw::unicode::Property;
        using sdw::unicode::hasProperty;
        QVERIFY(hasProperty(U'a', Property::Letter));
        QVERIFY(hasProperty(U'語', Property::Letter));
        QVERIFY(!hasProperty(U'1', Property::Letter));
        QVERIFY(hasProperty(U'٣', Property::Number));
        QVERIFY(hasProperty(U'½', Property::Number));
        QVERIFY(!hasProperty(U'½', Property::DecimalNumber));
        QVERIFY(hasProperty(0x3000, Property::WhiteSpace));
        QVERIFY(hasProperty(0x85, Property::WhiteSpace));
        QVERIFY(!hasProperty(0x200B, Property::WhiteSpace));  // zero width space is not White_Space
        QVERIFY(hasProperty(0x301, Property::Mark));
        QVERIFY(!hasProperty(sdw::unicode::kInvalidByteBase + 0xFF, Property::Letter));
    }

    void nfc_data() {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("expected");
        QTest::newRow("ascii") << QStringLiteral("plain text") << QStringLiteral("plain text");
        QTest::newRow("e acute") << QStringLiteral("cafe\u0301") << QStringLiteral("caf\u00e9");
        QTest::newRow("reordered marks") << QStringLiteral("e\u0302\u0323") << QStringLiteral("\u1ec7");
        QTest::newRow("hangul") << QStringLiteral("\u1100\u1161\u11a8") << QStringLiteral("\uac01");
        QTest::newRow("singleton") << QStringLiteral("\u212b") << QStringLiteral("\u00c5");  // ANGSTROM SIGN
        QTest::newRow("excluded") << QStringLiteral("\u0958") << QStringLiteral("\u0915\u093c");
        QTest::newRow("leading mark") << QStringLiteral("\u0301a") << QStringLiteral("\u0301a");
        QTest::newRow("already nfc") << QStringLiteral("Ünïcödé 日本") << QStringLiteral("Ünïcödé 日本");
    }
    void nfc() {
        QFETCH(QString, input);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(sdw::unicode::nfc(input.toStdString())), expected);
    }

    // Hard NFKC cases, spelled out (nfkcMatchesPython below has hundreds more).
    void nfkc_data() {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("expected");
        QTest::newRow("ligature") << QStringLiteral("\uFB01") << QStringLiteral("fi");
        QTest::newRow("long s, dot above and below") << QStringLiteral("\u1E9B\u0323") << QStringLiteral("\u1E69");
        QTest::newRow("half-width katakana, voiced mark") << QStringLiteral("\uFF76\uFF9E") << QStringLiteral("\u30AC");
        QTest::newRow("square era name") << QStringLiteral("\u337F") << QStringLiteral("\u682A\u5F0F\u4F1A\u793E");
        QTest::newRow("circled digit, superscript") << QStringLiteral("\u2460x\u00B2") << QStringLiteral("1x2");
        QTest::newRow("hangul jamo") << QStringLiteral("\u1100\u1161\u11A8") << QStringLiteral("\uAC01");
        QTest::newRow("full-width") << QStringLiteral("\uFF21\uFF42\uFF13") << QStringLiteral("Ab3");
        QTest::newRow("math bold") << QString::fromUcs4(U"\U0001D400\U0001D41B") << QStringLiteral("Ab");
        QTest::newRow("no-break space") << QStringLiteral("a\u00A0b") << QStringLiteral("a b");
        QTest::newRow("arabic ligature") << QStringLiteral("\uFDFA")
                                         << QStringLiteral("\u0635\u0644\u0649 \u0627\u0644\u0644\u0647 \u0639\u0644\u064A\u0647 "
                                                           "\u0648\u0633\u0644\u0645");
    }
    void nfkc() {
        QFETCH(QString, input);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(sdw::unicode::nfkc(input.toStdString())), expected);
    }

    // Invalid bytes pass through NFC and NFKC; nothing composes across them.
    void normalizationKeepsInvalidBytes() {
        const std::string text = "e\xCC\x81\xFF\xCC\x81x\xEF\xAC\x81\xC3";
        QCOMPARE(sdw::unicode::nfc(text), std::string("\xC3\xA9\xFF\xCC\x81x\xEF\xAC\x81\xC3"));
        QCOMPARE(sdw::unicode::nfkc(text), std::string("\xC3\xA9\xFF\xCC\x81x" "fi\xC3"));
        QCOMPARE(sdw::unicode::nfc(std::string_view("a\0\xCC\x81", 4)), std::string("a\0\xCC\x81", 4));
    }

    // NFKC (utf8proc) against Python's unicodedata: every code point whose
    // compatibility decomposition differs from its canonical one, and mixtures
    // (ligatures, full- and half-width forms with composing voiced marks, Hangul,
    // super/subscripts, math letters, Arabic ligatures up to 18 code points).
    // The cases' Unicode version may be older than utf8proc's: normalization
    // of assigned characters is stable across versions.
    void nfkcMatchesPython() {
        std::ifstream in(std::string(SDW_SOURCE_DIR) + "/tests/data/unicode/nfkc-cases.json");
        const json j = json::parse(in);
        auto majorMinor = [](const std::string& v) {
            const auto dot = v.find('.');
            return std::pair{std::stoi(v.substr(0, dot)), std::stoi(v.substr(dot + 1))};
        };
        QVERIFY2(majorMinor(j["unicode_version"].get<std::string>()) <= majorMinor(sdw::unicode::unicodeVersion()),
                 sdw::unicode::unicodeVersion());
        int n = 0;
        for (const auto& c : j["cases"]) {
            const std::string text = c["text"], want = c["nfkc"];
            QVERIFY2(sdw::unicode::nfkc(text) == want, text.c_str());
            ++n;
        }
        QVERIFY(n > 100);
        QCOMPARE(sdw::unicode::nfkc("plain"), std::string("plain"));
        // NFKC as a tokenizer normalizer.
        json t = tinyTokenizerJson();
        t["normalizer"] = {{"type", "NFKC"}};
        const auto tok = sdw::Tokenizer::fromJson(t.dump());
        QCOMPARE(tok.encode("\uFB01"), tok.encode("fi"));
    }

    void utf8Lossy() {
        using sdw::unicode::utf8Lossy;
        QCOMPARE(utf8Lossy("ok"), std::string("ok"));
        // Maximal subparts: E2 82 is one replacement, the lone FF another.
        QCOMPARE(utf8Lossy(std::string_view("a\xE2\x82" "b\xFF", 5)), std::string("a\xEF\xBF\xBD" "b\xEF\xBF\xBD"));
        QCOMPARE(sdw::unicode::utf8CompletePrefix(std::string_view("a\xF0\x9F\x98", 4)), std::size_t{1});
        QCOMPARE(sdw::unicode::utf8CompletePrefix(std::string_view("a\xFF", 2)), std::size_t{2});
    }

    // ---- tiny tokenizer with hand-computed ids -----------------------------------

    void tinyEncode_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("ids");
        QTest::newRow("merges") << QStringLiteral("hello world!") << QStringLiteral("259,264,33");
        QTest::newRow("partial merges") << QStringLiteral("Hello") << QStringLiteral("72,101,257,111");
        QTest::newRow("leftmost equal rank") << QStringLiteral("lll") << QStringLiteral("257,108");
        QTest::newRow("added tokens") << QStringLiteral("hello<|endoftext|>hel<tool>")
                                      << QStringLiteral("259,266,256,108,269");
        QTest::newRow("adjacent specials") << QStringLiteral("<|im_start|><|im_end|>") << QStringLiteral("267,268");
        QTest::newRow("unfinished special") << QStringLiteral("<|im_sta") << QStringLiteral("60,124,105,109,95,115,116,97");
        QTest::newRow("emoji bytes") << QStringLiteral("😀") << QStringLiteral("265,152,128");
        QTest::newRow("space run") << QStringLiteral("a   b") << QStringLiteral("97,32,32,32,98");
        QTest::newRow("empty") << QString() << QString();
    }
    void tinyEncode() {
        QFETCH(QString, text);
        QFETCH(QString, ids);
        const auto tok = tinyTokenizer();
        const std::string t = text.toStdString();
        const auto got = tok.encode(t);
        QCOMPARE(show(got), ids);
        QCOMPARE(tok.decode(got), t);
    }

    void tinyVocabulary() {
        const auto tok = tinyTokenizer();
        QCOMPARE(tok.vocabSize(), 270);
        QCOMPARE(tok.tokenText(264), "Ġworld");
        QCOMPARE(tok.tokenId("Ġworld"), std::optional<std::int32_t>(264));
        QCOMPARE(tok.tokenId("nope"), std::optional<std::int32_t>());
        QCOMPARE(tok.tokenText(9999), std::string());
        QVERIFY(tok.isSpecial(266));
        QVERIFY(!tok.isSpecial(269));
        QVERIFY(!tok.isSpecial(259));
        // No tokenizer_config.json: no bos or eos (never guessed from a spelling);
        // the special turn and text ends still stop generation.
        QCOMPARE(tok.bosId(), std::optional<std::int32_t>());
        QCOMPARE(tok.eosId(), std::optional<std::int32_t>());
        QCOMPARE(tok.stopIds(), (Ids{268, 266}));
        // No post-processor template: addSpecialTokens adds nothing.
        QCOMPARE(tok.encode("hello", true), (Ids{259}));
    }

    void tinyDecode() {
        const auto tok = tinyTokenizer();
        const Ids ids{267, 259, 268};
        QCOMPARE(tok.decode(ids), std::string("<|im_start|>hello<|im_end|>"));
        QCOMPARE(tok.decode(ids, true), std::string("hello"));
        // A lone first half of an emoji: replaced once, at the end.
        QCOMPARE(tok.decode(Ids{104, 265}), std::string("h\xEF\xBF\xBD"));
        // Unknown ids are skipped.
        QCOMPARE(tok.decode(Ids{104, 4000, 105}), std::string("hi"));
    }

    void templateAndIgnoreMerges() {
        auto j = tinyTokenizerJson();
        j["added_tokens"].push_back({{"id", 270}, {"content", "<|begin_of_text|>"}, {"special", true}});
        j["post_processor"] = {
            {"type", "Sequence"},
            {"processors",
             {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
              {{"type", "TemplateProcessing"},
               {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
               {"pair", json::array()},
               {"special_tokens", {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {270}}, {"tokens", {"<|begin_of_text|>"}}}}}}}}}};
        // "hel" + "lo" as a vocab entry without a merge path: only ignore_merges finds it.
        j["model"]["vocab"]["hellx"] = 271;
        j["model"]["ignore_merges"] = true;
        const auto tok = sdw::Tokenizer::fromJson(j.dump());
        QCOMPARE(tok.encode("hello", true), (Ids{270, 259}));
        QCOMPARE(tok.encode("hellx"), (Ids{271}));
        QCOMPARE(tok.bosId(), std::optional<std::int32_t>());  // no tokenizer_config.json
        j["model"]["ignore_merges"] = false;
        QCOMPARE(sdw::Tokenizer::fromJson(j.dump()).encode("hellx"), (Ids{258, 120}));
    }

    void splitSequenceAndPairMerges() {
        // Llama-3 layout: Split(Regex) + ByteLevel(use_regex=false); merges as pairs.
        auto j = tinyTokenizerJson();
        json pairs = json::array();
        for (const auto& m : j["model"]["merges"]) {
            const std::string s = m.get<std::string>();
            const auto sp = s.find(' ');
            pairs.push_back({s.substr(0, sp), s.substr(sp + 1)});
        }
        j["model"]["merges"] = pairs;
        j["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
        const auto tok = sdw::Tokenizer::fromJson(j.dump());
        // "12345" splits as 123|45 (digits are single bytes here either way), "I'M" as I|'M.
        QCOMPARE(tok.encode("hello world 12345"), (Ids{259, 264, 32, 49, 50, 51, 52, 53}));
        QCOMPARE(tok.decode(tok.encode("x\t\t  y\n\n z")), std::string("x\t\t  y\n\n z"));
    }

    void nfcNormalizerApplies() {
        auto j = tinyTokenizerJson();
        j["normalizer"] = {{"type", "NFC"}};
        const auto tok = sdw::Tokenizer::fromJson(j.dump());
        // e + U+0301 becomes U+00E9 (C3 A9) before byte-level encoding.
        QCOMPARE(tok.encode("e\xCC\x81"), (Ids{0xC3, 0xA9}));
    }

    // ---- streaming ------------------------------------------------------------------

    void streamDecoderHoldsBackPartialCharacters() {
        const auto tok = tinyTokenizer();
        sdw::StreamDecoder s(tok);
        QCOMPARE(s.push(259), std::string("hello"));
        QCOMPARE(s.push(32), std::string(" "));
        QCOMPARE(s.push(265), std::string());     // F0 9F
        QCOMPARE(s.push(152), std::string());     // 98
        QCOMPARE(s.push(128), std::string("😀"));  // 80 completes it
        QCOMPARE(s.push(265), std::string());
        QCOMPARE(s.flush(), std::string("\xEF\xBF\xBD"));
        QCOMPARE(s.flush(), std::string());
    }

    void streamDecoderMatchesDecode() {
        const auto tok = tinyTokenizer();
        const std::string text = "<|im_start|>hé 👋🏽 日本\xF0\x9F" "x<tool> world";
        const auto ids = tok.encode(text);
        sdw::StreamDecoder s(tok), skip(tok, true);
        std::string streamed, streamedSkip;
        for (auto id : ids) {
            streamed += s.push(id);
            streamedSkip += skip.push(id);
        }
        streamed += s.flush();
        streamedSkip += skip.flush();
        QCOMPARE(streamed, tok.decode(ids));
        QCOMPARE(streamedSkip, tok.decode(ids, true));
        QVERIFY(streamedSkip.find("<|im_start|>") == std::string::npos);
    }

    // ---- errors -------------------------------------------------------------------------

    void missingFile() {
        try {
            sdw::Tokenizer::fromFile("/nonexistent/dir/tokenizer.json");
            QFAIL("expected TokenizerError");
        } catch (const sdw::TokenizerError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains("/nonexistent/dir/tokenizer.json"), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains("no such file"), e.what());
        }
    }

    void badJson_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("mentions");
        auto mutate = [](auto&& f) {
            auto j = tinyTokenizerJson();
            f(j);
            return QString::fromStdString(j.dump());
        };
        QTest::newRow("not json") << "{\"model\": [1, 2" << "not valid JSON";
        QTest::newRow("no model") << "{}" << "no \"model\"";
        QTest::newRow("unigram") << mutate([](json& j) { j["model"] = {{"type", "Unigram"}, {"vocab", json::array()}}; })
                                 << "unsupported model type \"Unigram\"";
        QTest::newRow("wordpiece") << mutate([](json& j) { j["model"]["type"] = "WordPiece"; })
                                   << "unsupported model type \"WordPiece\"";
        QTest::newRow("unknown merge token") << mutate([](json& j) { j["model"]["merges"].push_back("zz q"); })
                                             << "merge 10 refers to unknown token 'zz'";
        QTest::newRow("merge result missing") << mutate([](json& j) { j["model"]["merges"].push_back("x y"); })
                                              << "'xy', which is not in the vocabulary";
        QTest::newRow("malformed merge") << mutate([](json& j) { j["model"]["merges"].push_back("abc"); })
                                         << "merge 10";
        QTest::newRow("whitespace") << mutate([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; })
                                    << "unsupported pre_tokenizer \"Whitespace\"";
        QTest::newRow("metaspace with byte-level decoder") << mutate([](json& j) {
            j["pre_tokenizer"] = {{"type", "Metaspace"}};
        }) << "no ByteLevel";
        QTest::newRow("no byte level") << mutate([](json& j) {
            j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}};
        }) << "no ByteLevel";
        QTest::newRow("bad regex") << mutate([](json& j) {
            j["pre_tokenizer"] = {{"type", "Sequence"},
                                  {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "(?<=x"}}}},
                                                     {{"type", "ByteLevel"}, {"use_regex", false}}}}};
        }) << "Split pattern";
        QTest::newRow("nfkd") << mutate([](json& j) { j["normalizer"] = {{"type", "NFKD"}}; })
                              << "unsupported normalizer \"NFKD\"";
        QTest::newRow("wordpiece decoder") << mutate([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; })
                                           << "unsupported decoder";
    }
    void badJson() {
        QFETCH(QString, json);
        QFETCH(QString, mentions);
        try {
            sdw::Tokenizer::fromJson(json.toStdString(), "some/tokenizer.json");
            QFAIL("expected TokenizerError");
        } catch (const sdw::TokenizerError& e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.startsWith("some/tokenizer.json: "), e.what());
            QVERIFY2(msg.contains(mentions), e.what());
        }
    }

    void fromFileReadsConfig() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path d = dir.path().toStdString();
        auto j = tinyTokenizerJson();
        j["added_tokens"].push_back({{"id", 270}, {"content", "<s>"}, {"special", true}});
        writeFile(d / "tokenizer.json", j.dump());
        auto tok = sdw::Tokenizer::fromFile(d / "tokenizer.json");
        QCOMPARE(tok.bosId(), std::optional<std::int32_t>());  // not guessed from "<s>"
        QCOMPARE(tok.eosId(), std::optional<std::int32_t>());
        writeFile(d / "tokenizer_config.json", json{{"bos_token", "<s>"}, {"eos_token", "<|endoftext|>"}}.dump());
        tok = sdw::Tokenizer::fromFile(d / "tokenizer.json");
        QCOMPARE(tok.bosId(), std::optional<std::int32_t>(270));
        QCOMPARE(tok.eosId(), std::optional<std::int32_t>(266));
        QCOMPARE(tok.encode("hello", true), (Ids{259}));  // no template, a generic class: nothing added
        writeFile(d / "tokenizer_config.json",
                  json{{"bos_token", nullptr}, {"eos_token", {{"content", "<|im_end|>"}}}}.dump());
        tok = sdw::Tokenizer::fromFile(d / "tokenizer.json");
        QCOMPARE(tok.bosId(), std::optional<std::int32_t>());
        QCOMPARE(tok.eosId(), std::optional<std::int32_t>(268));
        QCOMPARE(tok.stopIds(), (Ids{268, 266}));
        writeFile(d / "tokenizer.json", "not json");
        try {
            sdw::Tokenizer::fromFile(d / "tokenizer.json");
            QFAIL("expected TokenizerError");
        } catch (const sdw::TokenizerError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QString::fromStdString((d / "tokenizer.json").string())), e.what());
        }
    }

    // ---- SentencePiece layouts, Split behaviours, added-token flags -------------------

    void sentencePieceLayouts() {
        const auto llama = sdw::Tokenizer::fromJson(spTokenizerJson().dump());
        QCOMPARE(llama.encode("ab"), (Ids{265}));
        QCOMPARE(llama.encode("ab c"), (Ids{265, 259, 262}));
        QCOMPARE(llama.encode("\xC3\xA9"), (Ids{259, 3 + 0xC3, 3 + 0xA9}));  // "é" by byte fallback
        QCOMPARE(llama.encode("ab</s>ab", true), (Ids{1, 265, 2, 265}));    // "▁" prepended to each stretch
        QCOMPARE(llama.decode(Ids{1, 265, 259, 262}), std::string("<s> ab c"));
        QCOMPARE(llama.decode(Ids{265, 259, 262}), std::string("ab c"));
        const auto gemma = sdw::Tokenizer::fromJson(spGemmaJson().dump());
        QCOMPARE(gemma.encode("ab c"), (Ids{264, 259, 262}));
        QCOMPARE(gemma.encode(" a"), (Ids{263}));
        QCOMPARE(gemma.decode(Ids{263}), std::string(" a"));
        QCOMPARE(gemma.leadingSpacesDropped(), std::size_t(0));
    }

    void byteFallbackDecoding() {
        const auto tok = sdw::Tokenizer::fromJson(spTokenizerJson().dump());
        QCOMPARE(tok.decode(Ids{260, 3 + 0xC3, 3 + 0xA9}), std::string("a\xC3\xA9"));
        // An invalid run of byte tokens: one U+FFFD per byte, not per invalid sequence.
        QCOMPARE(tok.decode(Ids{3 + 0xC3, 3 + 0xC3, 3 + 0xA9}), std::string("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
        QCOMPARE(tok.decode(Ids{3 + 0xE4, 3 + 0xB8, 260}), std::string("\xEF\xBF\xBD\xEF\xBF\xBD" "a"));
        auto j = spTokenizerJson();
        j["decoder"]["decoders"][3]["stop"] = 1;
        QCOMPARE(sdw::Tokenizer::fromJson(j.dump()).decode(Ids{259, 260, 259, 259}), std::string("a "));
        std::swap(j["decoder"]["decoders"][2], j["decoder"]["decoders"][3]);
        QVERIFY_THROWS_EXCEPTION(sdw::TokenizerError, sdw::Tokenizer::fromJson(j.dump()));
    }

    void splitBehaviours_data() {
        QTest::addColumn<QString>("behavior");
        QTest::addColumn<bool>("invert");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("ids");
        // The Gemma layout with Split("▁"): "b a" is normalized to "b▁a".
        QTest::newRow("isolated") << "Isolated" << false << "b a" << "261,259,260";
        QTest::newRow("merged with next") << "MergedWithNext" << false << "b a" << "261,263";
        QTest::newRow("merged with next, run") << "MergedWithNext" << false << "b  a" << "261,259,263";
        QTest::newRow("merged with previous") << "MergedWithPrevious" << false << "b a" << "261,259,260";
        QTest::newRow("removed") << "Removed" << false << "b a" << "261,260";
        QTest::newRow("contiguous") << "Contiguous" << false << "b  a" << "261,259,259,260";
        QTest::newRow("removed, inverted") << "Removed" << true << "b a" << "259";
    }
    void splitBehaviours() {
        QFETCH(QString, behavior);
        QFETCH(bool, invert);
        QFETCH(QString, text);
        QFETCH(QString, ids);
        auto j = spGemmaJson();
        j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", kU2581}}}, {"behavior", behavior.toStdString()}, {"invert", invert}};
        QCOMPARE(show(sdw::Tokenizer::fromJson(j.dump()).encode(text.toStdString())), ids);
    }

    void addedTokenFlags() {
        auto j = tinyTokenizerJson();
        j["added_tokens"].push_back({{"id", 270}, {"content", "hel"}, {"single_word", true}, {"normalized", false}});
        j["added_tokens"].push_back({{"id", 271}, {"content", "<x>"}, {"lstrip", true}, {"rstrip", true}, {"special", true}});
        j["added_tokens"].push_back({{"id", 272}, {"content", "\xC3\xA9"}, {"normalized", true}});
        j["normalizer"] = {{"type", "NFC"}};
        const auto tok = sdw::Tokenizer::fromJson(j.dump());
        QCOMPARE(tok.encode("hel"), (Ids{270}));
        QCOMPARE(tok.encode("hel!"), (Ids{270, 33}));
        QCOMPARE(tok.encode("ahel"), (Ids{97, 256, 108}));  // inside a word: not the added token
        QCOMPARE(tok.encode("hello"), (Ids{259}));
        // lstrip/rstrip take Unicode white space (U+3000 here) with the token.
        QCOMPARE(tok.encode("a \xE3\x80\x80<x>\xE3\x80\x80 b"), (Ids{97, 271, 98}));
        // normalized=true: matched after NFC, so a decomposed "é" finds it.
        QCOMPARE(tok.encode("xe\xCC\x81"), (Ids{120, 272}));
        QCOMPARE(tok.encode("x\xC3\xA9"), (Ids{120, 272}));
    }

    void stripNormalizerAndLlamaConfig() {
        auto j = tinyTokenizerJson();
        j["normalizer"] = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}};
        QCOMPARE(sdw::Tokenizer::fromJson(j.dump()).encode("\xE3\x80\x80 hello \n"), (Ids{259}));
        // transformers' Llama/Gemma classes build the template from add_bos_token / add_eos_token.
        QTemporaryDir dir;
        const std::filesystem::path d = dir.path().toStdString();
        writeFile(d / "tokenizer.json", spTokenizerJson().dump());
        json cfg = {{"tokenizer_class", "LlamaTokenizerFast"}, {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_eos_token", true}};
        writeFile(d / "tokenizer_config.json", cfg.dump());
        QCOMPARE(sdw::Tokenizer::fromFile(d / "tokenizer.json").encode("ab", true), (Ids{1, 265, 2}));
        cfg["add_bos_token"] = false;
        writeFile(d / "tokenizer_config.json", cfg.dump());
        QCOMPARE(sdw::Tokenizer::fromFile(d / "tokenizer.json").encode("ab", true), (Ids{265, 2}));
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast";  // keeps the file's template
        writeFile(d / "tokenizer_config.json", cfg.dump());
        QCOMPARE(sdw::Tokenizer::fromFile(d / "tokenizer.json").encode("ab", true), (Ids{1, 265}));
    }

    // ---- chat formatting ----------------------------------------------------------------

    void chatFormats() {
        QCOMPARE(sdw::formatChat(sdw::ChatFamily::Qwen3, "Hi?"),
                 std::string("<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        QCOMPARE(sdw::formatChat(sdw::ChatFamily::Llama3, "Hi?"),
                 std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi?<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n"));
        QCOMPARE(sdw::formatChat(sdw::ChatFamily::Llama3, "Hi?", "Be brief."),
                 std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                             "<|start_header_id|>user<|end_header_id|>\n\nHi?<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n"));
        QCOMPARE(sdw::formatChat(sdw::ChatFamily::Qwen3, "Hi?", "Be brief."),
                 std::string("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        QCOMPARE(sdw::formatChat(sdw::ChatFamily::Plain, "Hi?"), std::string("Hi?"));
    }

    void chatDetectionAndPromptIds() {
        QTemporaryDir dir;
        const std::filesystem::path d = dir.path().toStdString();
        const auto qwen = tinyTokenizer();
        QCOMPARE(sdw::detectChatFamily(qwen, d), sdw::ChatFamily::Qwen3);  // by special tokens
        const auto ids = sdw::encodePrompt(qwen, sdw::ChatFamily::Qwen3, "hello");
        QCOMPARE(ids.front(), 267);
        QCOMPARE(qwen.decode(ids), sdw::formatChat(sdw::ChatFamily::Qwen3, "hello"));
        QCOMPARE(std::count(ids.begin(), ids.end(), 268), 1);
        // A template without chat markers: a base model, plain prompts.
        writeFile(d / "tokenizer_config.json", json{{"chat_template", "{{ messages[0]['content'] }}"}}.dump());
        QCOMPARE(sdw::detectChatFamily(qwen, d), sdw::ChatFamily::Plain);
        writeFile(d / "tokenizer_config.json", json{{"chat_template", "{{'<|im_start|>' + role}}"}}.dump());
        QCOMPARE(sdw::detectChatFamily(qwen, d), sdw::ChatFamily::Qwen3);

        auto j = tinyTokenizerJson();
        int id = 270;
        for (const char* t : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"})
            j["added_tokens"].push_back({{"id", id++}, {"content", t}, {"special", true}});
        const auto llama = sdw::Tokenizer::fromJson(j.dump());
        std::filesystem::remove(d / "tokenizer_config.json");
        QCOMPARE(sdw::detectChatFamily(llama, d), sdw::ChatFamily::Llama3);
        const auto lids = sdw::encodePrompt(llama, sdw::ChatFamily::Llama3, "hello");
        QCOMPARE(lids, (Ids{270, 271, 117, 115, 101, 114, 272, 10, 10, 259, 273, 271, 97, 115, 115, 105, 115, 116,
                            97, 110, 116, 272, 10, 10}));
        QCOMPARE(std::count(lids.begin(), lids.end(), 270), 1);  // bos once
        // Plain prompts get what the post-processor adds: nothing here (no template) ...
        QCOMPARE(sdw::encodePrompt(llama, sdw::ChatFamily::Plain, "hello"), (Ids{259}));
        // ... and the bos that a template prepends.
        j["post_processor"] = {{"type", "TemplateProcessing"},
                               {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
        QCOMPARE(sdw::encodePrompt(sdw::Tokenizer::fromJson(j.dump()), sdw::ChatFamily::Plain, "hello"), (Ids{270, 259}));
        QCOMPARE(sdw::encodePrompt(qwen, sdw::ChatFamily::Plain, "hello"), (Ids{259}));
    }

    // ---- golden cases from the reference library ---------------------------------------

    void golden_data() {
        QTest::addColumn<QString>("dir");
        QTest::addColumn<std::string>("text");
        QTest::addColumn<QString>("ids");
        QTest::addColumn<std::vector<std::string>>("tokens");
        QTest::addColumn<std::string>("decoded");
        QTest::addColumn<QString>("idsWithSpecial");
        QTest::addColumn<std::string>("decodedSkipSpecial");
        for (const auto& d : goldenDirs()) {
            const auto file = json::parse(readAll(d / "cases.json"));
            for (const auto& c : file.at("cases")) {
                const std::string name = d.filename().string() + "/" + c.value("name", "?");
                QTest::newRow(name.c_str()) << QString::fromStdString(d.string()) << c["text"].get<std::string>()
                                            << show(c["ids"].get<Ids>()) << c["tokens"].get<std::vector<std::string>>()
                                            << c["decoded"].get<std::string>()
                                            << show(c["ids_add_special_tokens"].get<Ids>())
                                            << c["decoded_skip_special"].get<std::string>();
            }
        }
    }
    void golden() {
        if (goldenDirs().empty()) QSKIP("golden tokenizer files not generated yet");
        QFETCH(QString, dir);
        QFETCH(std::string, text);
        QFETCH(QString, ids);
        QFETCH(std::vector<std::string>, tokens);
        QFETCH(std::string, decoded);
        QFETCH(QString, idsWithSpecial);
        QFETCH(std::string, decodedSkipSpecial);
        const auto tok = sdw::Tokenizer::fromFile(std::filesystem::path(dir.toStdString()) / "tokenizer.json");
        const auto got = tok.encode(text);
        QCOMPARE(show(got), ids);
        std::vector<std::string> gotTokens;
        for (auto id : got) gotTokens.push_back(tok.tokenText(id));
        QCOMPARE(show(gotTokens), show(tokens));
        QCOMPARE(tok.decode(got), decoded);
        QCOMPARE(tok.decode(got, true), decodedSkipSpecial);
        QCOMPARE(show(tok.encode(text, true)), idsWithSpecial);
        // Round trip: the text itself, or its NFC form where the tokenizer normalizes
        // (SentencePiece-style: the reference says where it does not).
        const bool normalizes = QString(dir).endsWith(QStringLiteral("qwen2"));
        if (!QString(dir).contains(QStringLiteral("stories260K")))
            QCOMPARE(tok.decode(got), normalizes ? sdw::unicode::nfc(text) : text);
        // Streaming gives the same text.
        sdw::StreamDecoder stream(tok);
        std::string streamed;
        for (auto id : got) streamed += stream.push(id);
        streamed += stream.flush();
        QCOMPARE(streamed, decoded);
    }

    void goldenVocabulary() {
        const auto dirs = goldenDirs();
        if (dirs.empty()) QSKIP("golden tokenizer files not generated yet");
        for (const auto& d : dirs) {
            const auto file = json::parse(readAll(d / "cases.json"));
            const auto tok = sdw::Tokenizer::fromFile(d / "tokenizer.json");
            QCOMPARE(tok.vocabSize(), file.at("vocab_size").get<std::int32_t>());
            if (d.filename().string().starts_with("stories260K")) {  // imported from llama2.c: SentencePiece-style
                QVERIFY(!tok.isByteLevel());
                QCOMPARE(tok.bosId(), std::optional<std::int32_t>(1));
                QCOMPARE(tok.eosId(), std::optional<std::int32_t>(2));
                QCOMPARE(tok.leadingSpacesDropped(), std::size_t(1));
                QCOMPARE(tok.encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
                QCOMPARE(sdw::detectChatFamily(tok, d), sdw::ChatFamily::Plain);
            } else if (d.filename() == "llama3") {
                QCOMPARE(tok.bosId(), std::optional<std::int32_t>(2000));
                QCOMPARE(tok.eosId(), std::optional<std::int32_t>(2001));
                QCOMPARE(tok.stopIds(), (Ids{2001, 2004}));
                QVERIFY(tok.isSpecial(2004));
                QCOMPARE(sdw::detectChatFamily(tok, d), sdw::ChatFamily::Llama3);
            } else {
                QCOMPARE(tok.bosId(), std::optional<std::int32_t>());
                QCOMPARE(tok.eosId(), std::optional<std::int32_t>(2000));
                QCOMPARE(tok.stopIds(), (Ids{2000, 2002}));
                QVERIFY(!tok.isSpecial(2003));  // <think> is an added, not a special, token
                QCOMPARE(sdw::detectChatFamily(tok, d), sdw::ChatFamily::Qwen3);
                const auto ids = sdw::encodePrompt(tok, sdw::ChatFamily::Qwen3, "Hi");
                QCOMPARE(ids.front(), 2001);
                QVERIFY(std::find(ids.begin(), ids.end(), 2003) != ids.end());
                QVERIFY(std::find(ids.begin(), ids.end(), 2004) != ids.end());
            }
        }
    }

    // ---- throughput ----------------------------------------------------------------------

    void encodesBrownQuickly() {
        const auto corpus = std::filesystem::path(SDW_SOURCE_DIR) / "samples/corpus/brown-calib.txt";
        if (!std::filesystem::exists(corpus)) QSKIP("samples/corpus/brown-calib.txt not present");
        const std::string text = readAll(corpus).substr(0, 1 << 20);
        const auto dirs = goldenDirs();
        const auto tok = dirs.empty() ? tinyTokenizer() : sdw::Tokenizer::fromFile(dirs.front() / "tokenizer.json");
        const double t0 = cpuSeconds();  // this thread's CPU time: other processes do not move it
        const auto ids = tok.encode(text);
        const double secs = cpuSeconds() - t0;
        qInfo("encoded 1 MiB of Brown text into %zu tokens in %.3f s CPU with %s", ids.size(), secs,
              tok.sourceName().c_str());
        QCOMPARE(tok.decode(ids), text);
        QVERIFY2(secs < 10.0, "encoding 1 MiB took more than 10 s of CPU time");
    }

    void longPiecesAreNotQuadratic() {
        // One long pre-token (no spaces) and a long space run: the heap-based merge and
        // the regex must stay near linear. A complexity check, not a speed one: 4x the
        // bytes must cost well under 16x (quadratic) the thread's CPU time, which neither
        // other processes nor a sanitizer's constant slowdown move.
        const auto dirs = goldenDirs();
        const auto tok = dirs.empty() ? tinyTokenizer() : sdw::Tokenizer::fromFile(dirs.front() / "tokenizer.json");
        const auto encodeBoth = [&](std::size_t bytes) {
            std::string letters;
            for (std::size_t i = 0; letters.size() < bytes; ++i) letters += "thehellotheworld"[i % 16];
            const std::string spaces = std::string(bytes, ' ') + "x";
            const double t0 = cpuSeconds();
            const auto a = tok.encode(letters);
            const auto b = tok.encode(spaces);
            const double secs = cpuSeconds() - t0;
            if (tok.decode(a) != letters || tok.decode(b) != spaces) return -1.0;
            return secs;
        };
        (void)encodeBoth(4u << 10);  // first-use work out of the way
        const double small = encodeBoth(64u << 10), large = encodeBoth(256u << 10);
        qInfo("two 64 KiB single pieces: %.3f s CPU; two 256 KiB: %.3f s (ratio %.1f; linear 4, quadratic 16)", small,
              large, large / std::max(small, 1e-9));
        QVERIFY2(small >= 0 && large >= 0, "a long piece does not decode back to its text");
        QVERIFY2(large < 8.0 * small + 0.05, "4x longer pieces cost 8x the time or more: not near linear");
    }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
