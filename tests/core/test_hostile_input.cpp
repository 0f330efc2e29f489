// Hostile input, core side: the bounded JSON parser (core/json_limits.h), the
// pre-tokenizer regexes' limits and budgets (core/split_regex.h), and what the
// tokenizer and the run store make of them. The same inputs through sdw-cli
// are in tests/app/test_hostile.cpp.

#include "core/json_limits.h"
#include "core/provenance.h"
#include "core/runstore.h"
#include "core/split_regex.h"
#include "core/tokenizer.h"
#include "core/unicode.h"

#include <nlohmann/json.hpp>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string nested(std::size_t levels, char open = '[') {
    const char close = open == '[' ? ']' : '}';
    std::string s;
    for (std::size_t i = 0; i < levels; ++i) s += open == '[' ? "[" : "{\"a\":";
    s += "1";
    s.append(levels, close);
    return s;
}

std::string readAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const fs::path kData = fs::path(SDW_SOURCE_DIR) / "tests" / "data" / "tokenizer";

// The Split pattern of a test tokenizer's pre_tokenizer.
std::string splitPattern(const std::string& name) {
    const json t = json::parse(readAll(kData / name / "tokenizer.json"));
    return t.at("pre_tokenizer").at("pretokenizers").at(0).at("pattern").at("Regex").get<std::string>();
}

// Which exception parseJsonBounded threw, and its message.
std::pair<int, std::string> refusal(const std::string& text, const sdw::JsonLimits& limits = {}) {
    try {
        (void)sdw::parseJsonBounded(text, "test.json", limits);
    } catch (const sdw::JsonInputError& e) {
        return {static_cast<int>(e.reason()), e.what()};
    }
    return {-1, ""};
}

// The stories260K tokenizer (SentencePiece-style, no pre_tokenizer) with one
// section replaced.
std::string storiesWith(const char* section, const json& value) {
    json t = json::parse(readAll(fs::path(SDW_SOURCE_DIR) / "samples" / "model" / "stories260K" / "tokenizer.json"));
    t[section] = value;
    return t.dump();
}

}  // namespace

class TestHostileInput : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void jsonDepth_data() {
        QTest::addColumn<QString>("open");
        QTest::newRow("arrays") << "[";
        QTest::newRow("objects") << "{";
    }
    void jsonDepth() {
        QFETCH(QString, open);
        const char o = open.toStdString()[0];
        // 64 levels are accepted and can be printed and copied; 65 are not.
        const json ok = sdw::parseJsonBounded(nested(64, o), "test.json");
        QCOMPARE(json(ok).dump().size(), nested(64, o).size());
        const auto [reason, what] = refusal(nested(65, o));
        QCOMPARE(reason, static_cast<int>(sdw::JsonInputError::Reason::TooDeep));
        QCOMPARE(QString::fromStdString(what), QStringLiteral("test.json: JSON nested deeper than 64 levels"));
        // Tens of thousands of levels, closed or not, stop at the 65th.
        QElapsedTimer t;
        t.start();
        const std::string deep = nested(50000, o);
        QCOMPARE(refusal(deep).first, static_cast<int>(sdw::JsonInputError::Reason::TooDeep));
        QCOMPARE(refusal(deep.substr(0, deep.size() / 2)).first, static_cast<int>(sdw::JsonInputError::Reason::TooDeep));
        QVERIFY2(t.elapsed() < 1000, qPrintable(QString::number(t.elapsed()) + " ms"));
        // A smaller limit where asked.
        QCOMPARE(refusal(nested(5, o), {4, 1 << 20}).first, static_cast<int>(sdw::JsonInputError::Reason::TooDeep));
        QCOMPARE(refusal(nested(4, o), {4, 1 << 20}).first, -1);
    }

    void jsonSizeAndSyntax() {
        using R = sdw::JsonInputError::Reason;
        const auto [reason, what] = refusal(std::string(2000, ' ') + "1", {64, 1000});
        QCOMPARE(reason, static_cast<int>(R::TooLarge));
        QVERIFY2(what.find("test.json: 2001 bytes of JSON is over the 1000 bytes limit") == 0, what.c_str());
        const auto [r2, w2] = refusal("{\"a\": [1, 2");
        QCOMPARE(r2, static_cast<int>(R::NotJson));
        QVERIFY2(w2.find("test.json: not valid JSON: ") == 0, w2.c_str());
        QVERIFY(w2.find('\n') == std::string::npos);
    }

    void fileSizeCheckedBeforeReading() {
        QTemporaryDir dir;
        const fs::path big = fs::path(dir.path().toStdString()) / "config.json";
        {
            std::ofstream out(big, std::ios::binary);
            out << "{}";
        }
        fs::resize_file(big, 3u << 20);  // sparse: 3 MiB
        try {
            (void)sdw::readJsonFileBounded(big, {64, 1u << 20});
            QFAIL("a 3 MiB file was read under a 1 MiB limit");
        } catch (const sdw::JsonInputError& e) {
            QCOMPARE(e.reason(), sdw::JsonInputError::Reason::TooLarge);
            QVERIFY2(std::string(e.what()).find(big.string() + ": 3145728 bytes is over the 1 MiB limit") == 0, e.what());
        }
        QCOMPARE(refusal("[]").first, -1);
    }

    // The real tokenizer files nest 4 levels and parse unchanged.
    void realFilesParse() {
        for (const char* name : {"llama3", "qwen2", "stories260K"}) {
            const std::string text = readAll(kData / name / "tokenizer.json");
            QCOMPARE(sdw::parseJsonBounded(text, name, sdw::kTokenizerJsonLimits), json::parse(text));
        }
    }

    // Catastrophic backtracking stops with a RegexError naming the pattern
    // (Oniguruma's retry limit, core/split_regex.h), on short texts and long
    // ones. Some of the classic cases never start: Oniguruma reduces (?:a*)*
    // to a* and looks for the literal a match needs (b, x, c) before
    // backtracking; without it they answer "no match" at once.
    void regexBudget_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("refused");
        const std::vector<std::tuple<const char*, const char*, const char*, bool>> cases = {
            {"(a|a)*$", "a", "b", true},     {"(.*)*x", "y", "\nx", true}, {"(a|aa)*c", "a", "bc", true},
            {"(a+)+b", "a", "cb", true},     {"(\\w+\\s?)*$", "ab", "!", true},
            {"(?:a*)*b", "a", "c", false},   {"(.*)*x", "y", "", false},    {"(a|aa)*c", "a", "", false}};
        for (const auto& [pattern, unit, tail, refused] : cases) {
            for (int n : {28, 3000, 5000}) {
                QTest::addRow("%s on %d, %s", pattern, n, refused ? "refused" : "no match")
                    << QString::fromUtf8(pattern) << QString(QString::fromUtf8(unit).repeated(n) + QString::fromUtf8(tail))
                    << refused;
            }
        }
    }
    void regexBudget() {
        QFETCH(QString, pattern);
        QFETCH(QString, text);
        QFETCH(bool, refused);
        const sdw::Regex re(pattern.toStdString());
        QElapsedTimer t;
        t.start();
        try {
            (void)re.findAll(std::string_view(text.toStdString()));
            QVERIFY2(!refused, "matched without hitting a limit");
        } catch (const sdw::RegexError& e) {
            QVERIFY2(refused, e.what());
            QVERIFY2(std::string(e.what()).find("regex " + pattern.toStdString() + ": ") == 0, e.what());
            QVERIFY2(std::string(e.what()).find("backtracking retries (catastrophic backtracking)") != std::string::npos, e.what());
        }
        QVERIFY2(t.elapsed() < 500, qPrintable(QString::number(t.elapsed()) + " ms"));
    }

    // What the retry count misses: a pattern that fails at one position after
    // another, each time after scanning the rest of the text without
    // backtracking (a*b on a...acb, [^c]*d|b on abab...c: n^2 steps). The CPU
    // time limit stops it: here 0.9 s, where the whole scan would take minutes.
    void regexCpuLimit_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("text");
        QTest::newRow("a*b") << "a*b" << QString(QStringLiteral("a").repeated(200000) + "cb");
        QTest::newRow("[^c]*d|b") << "[^c]*d|b" << QString(QStringLiteral("ab").repeated(100000) + "c");
    }
    void regexCpuLimit() {
        QFETCH(QString, pattern);
        QFETCH(QString, text);
        const sdw::Regex re(pattern.toStdString());
        QElapsedTimer t;
        t.start();
        try {
            (void)re.findAll(std::string_view(text.toStdString()));
            QFAIL("matched without hitting a limit");
        } catch (const sdw::RegexError& e) {
            QVERIFY2(std::string(e.what()).find("regex " + pattern.toStdString() + ": matching a ") == 0, e.what());
            QVERIFY2(std::string(e.what()).find("ms of CPU time") != std::string::npos, e.what());
        }
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed()) + " ms"));
    }

    // The real patterns are charged a small part of the retry budget on any
    // text: GPT-2 (kGpt2Pattern in core/tokenizer_impl.h), Llama-3 and Qwen2,
    // on long runs of each character class and a mix. Each search is charged
    // the first limit it is given (128), so one-character pieces cost 128 a
    // byte; a quarter of the budget's 1000 is the bound asserted.
    void realPatternsStayLinear() {
        const std::vector<std::string> patterns = {
            R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", splitPattern("llama3"),
            splitPattern("qwen2")};
        const std::size_t n = 60000;
        std::vector<std::u32string> texts = {std::u32string(n, U' '), std::u32string(n, U' ') + U"x",
                                             std::u32string(n, U'\n'), std::u32string(n, U'a'),
                                             std::u32string(n, U'7'), std::u32string(n, U'.'),
                                             std::u32string(n, U'\''), std::u32string(n, 0x4E2D)};
        std::u32string mix, punctLines;
        const std::u32string alphabet = U"aZ 1\n\t\r.,'!\u00E9\u4E2D\u00A0-_/sS";
        for (std::size_t i = 0; i < n; ++i) mix += alphabet[(i * 7919 + i / 13) % alphabet.size()];
        for (std::size_t i = 0; i < n / 2; ++i) punctLines += U".\n";
        texts.push_back(mix);
        texts.push_back(punctLines);
        for (const auto& p : patterns) {
            const sdw::Regex re(p);
            for (const auto& t : texts) {
                std::string utf8;
                for (char32_t c : t) sdw::unicode::appendUtf8(utf8, c);
                std::size_t charged = 0;
                QElapsedTimer timer;
                timer.start();
                (void)re.findAll(utf8, charged);
                QVERIFY2(charged <= sdw::Regex::kRetryBudgetPerByte / 4 * (utf8.size() + 1),
                         qPrintable(QString::fromStdString(p) + ": " + QString::number(charged) + " retries charged on " +
                                    QString::number(utf8.size()) + " bytes"));
                QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed()) + " ms"));
            }
        }
    }

    void regexCompileLimits_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("message");
        QTest::newRow("nested groups") << QString(QStringLiteral("(").repeated(5000) + "a" + QStringLiteral(")").repeated(5000))
                                       << "groups, classes or quantifiers nested too deep";
        QTest::newRow("stacked quantifiers") << QString("a" + QStringLiteral("?").repeated(10000))
                                             << "groups, classes or quantifiers nested too deep";
        QTest::newRow("nested classes") << QString(QStringLiteral("[").repeated(5000) + "a" + QStringLiteral("]").repeated(5000))
                                        << "groups, classes or quantifiers nested too deep";
        QTest::newRow("long pattern") << QStringLiteral("a").repeated(20000) << "pattern longer than 16384 bytes";
    }
    void regexCompileLimits() {
        QFETCH(QString, pattern);
        QFETCH(QString, message);
        try {
            const sdw::Regex re(pattern.toStdString());
            QFAIL("compiled");
        } catch (const sdw::RegexError& e) {
            QVERIFY2(std::string(e.what()).find(message.toStdString()) != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).size() < 400, e.what());  // the pattern is cut short in messages
        }
        // Within the limits: 63 groups deep compiles and matches.
        const sdw::Regex ok(QString(QStringLiteral("(").repeated(63) + "a" + QStringLiteral(")").repeated(63)).toStdString());
        QCOMPARE(ok.findAll(std::string_view("xa")).size(), std::size_t{1});
    }

    // A tokenizer whose Split pattern backtracks without end: encode fails
    // with a TokenizerError naming the source and the pattern.
    void tokenizerPatternBudget() {
        const json split = {{"type", "Split"}, {"pattern", {{"Regex", "(.*)*x"}}}, {"behavior", "Isolated"}};
        const auto tok = sdw::Tokenizer::fromJson(storiesWith("pre_tokenizer", split), "hostile.json");
        QElapsedTimer t;
        t.start();
        try {
            (void)tok.encode(std::string(3000, 'y') + "\nx");
            QFAIL("encoded");
        } catch (const sdw::TokenizerError& e) {
            QVERIFY2(std::string(e.what()).find("hostile.json: pre_tokenizer: regex (.*)*x: ") == 0, e.what());
        }
        QVERIFY(t.elapsed() < 1000);
        // Short texts it can match are still encoded.
        QVERIFY(!tok.encode("yx").empty());
    }

    void tokenizerSequences_data() {
        QTest::addColumn<QString>("section");
        QTest::addColumn<QString>("listKey");
        QTest::addColumn<QString>("leaf");
        QTest::newRow("normalizer") << "normalizer" << "normalizers" << R"({"type": "NFC"})";
        QTest::newRow("pre_tokenizer") << "pre_tokenizer" << "pretokenizers" << R"({"type": "Metaspace"})";
        QTest::newRow("decoder") << "decoder" << "decoders" << R"({"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "})";
        QTest::newRow("post_processor") << "post_processor" << "processors" << R"({"type": "ByteLevel"})";
    }
    void tokenizerSequences() {
        QFETCH(QString, section);
        QFETCH(QString, listKey);
        QFETCH(QString, leaf);
        const std::string s = section.toStdString();
        auto wrap = [&](int levels) {
            json v = json::parse(leaf.toStdString());
            for (int i = 0; i < levels; ++i) v = {{"type", "Sequence"}, {listKey.toStdString(), json::array({v})}};
            return v;
        };
        auto errorOf = [&](const json& v) -> std::string {
            try {
                (void)sdw::Tokenizer::fromJson(storiesWith(s.c_str(), v), "tok.json");
            } catch (const sdw::TokenizerError& e) {
                return e.what();
            }
            return "";
        };
        // Nested 8 deep loads (the decoder also needs its Replace to be read); 9 deep is refused.
        QCOMPARE(QString::fromStdString(errorOf(wrap(8))).contains("Sequence nested"), false);
        QCOMPARE(QString::fromStdString(errorOf(wrap(9))),
                 QString("tok.json: " + section + ": Sequence nested deeper than 8 levels"));
        // Too many steps in one flat Sequence.
        json flat = {{"type", "Sequence"}, {listKey.toStdString(), json::array()}};
        for (int i = 0; i < 300; ++i) flat[listKey.toStdString()].push_back(json::parse(leaf.toStdString()));
        QCOMPARE(QString::fromStdString(errorOf(flat)), QString("tok.json: " + section + ": more than 256 steps"));
        // Thousands of levels stop at the JSON depth limit, before any loader recursion.
        std::string text = storiesWith(s.c_str(), "@@");
        std::string deep;
        for (int i = 0; i < 30000; ++i) deep += "{\"type\": \"Sequence\", \"" + listKey.toStdString() + "\": [";
        deep += leaf.toStdString();
        for (int i = 0; i < 30000; ++i) deep += "]}";
        text.replace(text.find("\"@@\""), 4, deep);
        try {
            (void)sdw::Tokenizer::fromJson(text, "tok.json");
            QFAIL("loaded");
        } catch (const sdw::TokenizerError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("tok.json: JSON nested deeper than 64 levels"));
        }
    }

    // The writer refuses settings the readers would refuse.
    void runSettingsBounded() {
        QTemporaryDir dir;
        sdw::Provenance p = sdw::Provenance::capture();
        p.settingsJson = nested(100);
        const fs::path run = fs::path(dir.path().toStdString()) / "deep.sdw.h5";
        try {
            (void)sdw::runstore::RunWriter::create(run, p, "test");
            QFAIL("created");
        } catch (const sdw::runstore::RunStoreError& e) {
            QCOMPARE(e.code(), sdw::runstore::ErrorCode::InvalidArgument);
            QVERIFY2(std::string(e.what()).find("nested deeper than 64 levels") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestHostileInput)
#include "test_hostile_input.moc"
