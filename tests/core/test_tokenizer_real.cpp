// The tokenizer files of real checkpoints: Mistral-7B, Llama-3, Qwen3 and
// Gemma 3, fetched into .tokenizers/<name>/ by tools/reference/fetch_tokenizers.sh
// (not committed: model licences). Each is held to a few hand-checked
// encodings (ids looked up in its vocabulary) and its bos/eos, and, once
// tools/reference/tokenizer_goldens.py has run, to the reference `tokenizers`
// library (and transformers' bos/eos) on ~2,500 texts in tests/data/tokenizer-real/.

#include "core/chat_format.h"
#include "core/tokenizer.h"

#include <nlohmann/json.hpp>

#include <QCryptographicHash>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

using json = nlohmann::json;
using Ids = std::vector<std::int32_t>;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = SDW_SOURCE_DIR;
const char* const kFetch = "tools/reference/fetch_tokenizers.sh";

fs::path tokenizerDir(const std::string& name) { return kSource / ".tokenizers" / name; }
fs::path casesDir() { return kSource / "tests/data/tokenizer-real"; }

std::string readAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Loading Gemma 3's 33 MB file takes seconds: once per tokenizer.
const sdw::Tokenizer* load(const std::string& name) {
    static std::map<std::string, std::unique_ptr<sdw::Tokenizer>> cache;
    auto& slot = cache[name];
    if (!slot && fs::is_regular_file(tokenizerDir(name) / "tokenizer.json"))
        slot = std::make_unique<sdw::Tokenizer>(sdw::Tokenizer::fromFile(tokenizerDir(name) / "tokenizer.json"));
    return slot.get();
}

// "ids" of a cases file: unsigned LEB128 varints, base64.
Ids unpackIds(const std::string& b64) {
    const QByteArray bytes = QByteArray::fromBase64(QByteArray::fromStdString(b64));
    Ids ids;
    std::uint32_t v = 0;
    int shift = 0;
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        v |= static_cast<std::uint32_t>(b & 0x7F) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            ids.push_back(static_cast<std::int32_t>(v));
            v = 0;
            shift = 0;
        }
    }
    return ids;
}

QString show(const Ids& v) {
    QStringList l;
    for (auto i : v) l << QString::number(i);
    return l.join(QStringLiteral(","));
}

std::string sha256(const std::string& bytes) {
    return QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256).toHex().toStdString();
}

}  // namespace

Q_DECLARE_METATYPE(std::string)

class TestTokenizerReal : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // ---- hand-checked: every id below was looked up in the file's vocabulary ----------

    void handChecked_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<std::string>("text");
        QTest::addColumn<QString>("ids");  // encode(text, addSpecialTokens=true)
        QTest::addColumn<std::string>("decodedSkipSpecial");
        // Mistral: Prepend("▁") + Replace, byte fallback, <s> from the template and add_bos_token.
        QTest::newRow("mistral hello") << "mistral" << std::string("Hello world") << "1,22557,1526" << std::string("Hello world");
        QTest::newRow("mistral leading space") << "mistral" << std::string(" Hello") << "1,28705,22557" << std::string(" Hello");
        QTest::newRow("mistral [INST]") << "mistral" << std::string("[INST]") << "1,733,16289,28793" << std::string("[INST]");
        QTest::newRow("mistral newlines") << "mistral" << std::string("a\n\n\nb") << "1,264,13,13,13,28726" << std::string("a\n\n\nb");
        QTest::newRow("mistral </s> in text") << "mistral" << std::string("a</s>") << "1,264,2" << std::string("a");
        // Llama-3: this revision's post-processor is ByteLevel alone, so no <|begin_of_text|>.
        QTest::newRow("llama3 hello") << "llama3" << std::string("Hello world") << "9906,1917" << std::string("Hello world");
        QTest::newRow("llama3 leading space") << "llama3" << std::string(" Hello") << "22691" << std::string(" Hello");
        QTest::newRow("llama3 special") << "llama3" << std::string("<|begin_of_text|>hi<|eot_id|>") << "128000,6151,128009"
                                        << std::string("hi");
        // Qwen3: NFC, no bos; "<s>" is ordinary text there.
        QTest::newRow("qwen3 hello") << "qwen3" << std::string("Hello world") << "9707,1879" << std::string("Hello world");
        QTest::newRow("qwen3 chat") << "qwen3" << std::string("<|im_start|>user\nhi<|im_end|>") << "151644,872,198,6023,151645"
                                    << std::string("user\nhi");
        // Gemma 3: Replace(" " -> "▁") with nothing prepended, "\n\n\n" an added token, <bos> prepended.
        QTest::newRow("gemma3 hello") << "gemma3" << std::string("Hello world") << "2,9259,1902" << std::string("Hello world");
        QTest::newRow("gemma3 leading space") << "gemma3" << std::string(" Hello") << "2,26352" << std::string(" Hello");
        QTest::newRow("gemma3 newlines") << "gemma3" << std::string("a\n\n\nb") << "2,236746,109,236763" << std::string("a\n\n\nb");
        QTest::newRow("gemma3 turn") << "gemma3" << std::string("<start_of_turn>user") << "2,105,2364" << std::string("user");
        QTest::newRow("gemma3 empty") << "gemma3" << std::string() << "2" << std::string();
    }
    void handChecked() {
        QFETCH(QString, name);
        QFETCH(std::string, text);
        QFETCH(QString, ids);
        QFETCH(std::string, decodedSkipSpecial);
        const auto* tok = load(name.toStdString());
        if (!tok) QSKIP(qPrintable(QStringLiteral(".tokenizers/%1/ absent: run %2").arg(name, kFetch)));
        const Ids got = tok->encode(text, true);
        QCOMPARE(show(got), ids);
        QCOMPARE(tok->decode(got, true), decodedSkipSpecial);
    }

    void bosEosFromConfig_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("bos");  // -1: none
        QTest::addColumn<int>("eos");
        QTest::addColumn<QString>("stops");
        QTest::addColumn<QString>("plainPrompt");  // encodePrompt(Plain, "Hi")
        QTest::newRow("mistral") << "mistral" << 1 << 2 << "2" << "1,15359";
        QTest::newRow("llama3") << "llama3" << 128000 << 128001 << "128001,128009" << "13347";
        QTest::newRow("qwen3") << "qwen3" << -1 << 151645 << "151645,151643" << "13048";
        QTest::newRow("gemma3") << "gemma3" << 2 << 106 << "106" << "2,10979";
    }
    void bosEosFromConfig() {
        QFETCH(QString, name);
        QFETCH(int, bos);
        QFETCH(int, eos);
        QFETCH(QString, stops);
        QFETCH(QString, plainPrompt);
        const auto* tok = load(name.toStdString());
        if (!tok) QSKIP(qPrintable(QStringLiteral(".tokenizers/%1/ absent: run %2").arg(name, kFetch)));
        QCOMPARE(tok->bosId().value_or(-1), bos);
        QCOMPARE(tok->eosId().value_or(-1), eos);
        QCOMPARE(show(tok->stopIds()), stops);
        QCOMPARE(show(sdw::encodePrompt(*tok, sdw::ChatFamily::Plain, "Hi")), plainPrompt);
    }

    // ---- against the reference library (tools/reference/tokenizer_goldens.py) ---------

    void golden_data() {
        QTest::addColumn<QString>("name");
        for (const char* n : {"mistral", "llama3", "qwen3", "gemma3"}) QTest::newRow(n) << QString::fromLatin1(n);
    }
    void golden() {
        QFETCH(QString, name);
        const std::string n = name.toStdString();
        const fs::path casesFile = casesDir() / (n + ".cases.json"), textsFile = casesDir() / "texts.json";
        if (!fs::is_regular_file(casesFile) || !fs::is_regular_file(textsFile))
            QSKIP(qPrintable(QStringLiteral("tests/data/tokenizer-real/%1.cases.json not made yet: run "
                                            "tools/reference/tokenizer_goldens.py on a machine with tokenizers")
                                 .arg(name)));
        const auto* tok = load(n);
        if (!tok) QSKIP(qPrintable(QStringLiteral(".tokenizers/%1/ absent: run %2").arg(name, kFetch)));
        const std::string textsBlob = readAll(textsFile);
        const auto cases = json::parse(readAll(casesFile));
        QCOMPARE(sha256(textsBlob), cases.at("texts_sha256").get<std::string>());
        if (sha256(readAll(tokenizerDir(n) / "tokenizer.json")) != cases.at("tokenizer_json_sha256").get<std::string>())
            QSKIP("the fetched tokenizer.json is not the one the cases were made with");
        QCOMPARE(tok->vocabSize(), cases.at("vocab_size").get<std::int32_t>());

        const auto texts = json::parse(textsBlob);
        const auto& names = texts.at("names");
        const auto& all = texts.at("texts");
        const auto& idsList = cases.at("ids");
        QCOMPARE(idsList.size(), all.size());
        const auto& decodedDiff = cases.at("decoded");
        const auto& skipDiff = cases.at("decoded_skip_special");
        const auto& exceptions = cases.at("transformers_exceptions");
        // Texts where transformers' own pipeline encodes differently from the
        // tokenizer.json (its LlamaTokenizer rebuilds the Mistral/Llama-2
        // normalizer: 36 texts with leading spaces): ids follow `tokenizers`,
        // only the BOS/EOS placement follows transformers.
        const auto& disagree = cases.at("transformers_ids_disagree");
        const Ids prefix = cases.at("transformers_prefix").get<Ids>(), suffix = cases.at("transformers_suffix").get<Ids>();
        int failures = 0;
        auto fail = [&](std::size_t i, const char* what, const QString& got, const QString& want) {
            if (++failures <= 10)
                qWarning("%s: %s: got %s, want %s", names[i].get<std::string>().c_str(), what, qPrintable(got.left(300)),
                         qPrintable(want.left(300)));
        };
        for (std::size_t i = 0; i < all.size(); ++i) {
            const std::string text = all[i].get<std::string>();
            const std::string key = std::to_string(i);
            const Ids want = unpackIds(idsList[i].get<std::string>());
            const Ids got = tok->encode(text);
            if (got != want) {
                fail(i, "ids", show(got), show(want));
                continue;
            }
            const std::string decoded = decodedDiff.contains(key) ? decodedDiff[key].get<std::string>() : text;
            if (tok->decode(got) != decoded)
                fail(i, "decoded", QString::fromStdString(tok->decode(got)), QString::fromStdString(decoded));
            const std::string skipped = skipDiff.contains(key) ? skipDiff[key].get<std::string>() : decoded;
            if (tok->decode(got, true) != skipped)
                fail(i, "decoded_skip_special", QString::fromStdString(tok->decode(got, true)), QString::fromStdString(skipped));
            Ids withSpecial = prefix;
            withSpecial.insert(withSpecial.end(), want.begin(), want.end());
            withSpecial.insert(withSpecial.end(), suffix.begin(), suffix.end());
            if (exceptions.contains(key) && !disagree.contains(key)) withSpecial = exceptions[key].get<Ids>();
            if (tok->encode(text, true) != withSpecial)
                fail(i, "ids with special tokens", show(tok->encode(text, true)), show(withSpecial));
        }
        qInfo("%s: %zu texts against tokenizers %s", n.c_str(), all.size(),
              cases.value("tokenizers_version", std::string("?")).c_str());
        QCOMPARE(failures, 0);
    }
};

QTEST_GUILESS_MAIN(TestTokenizerReal)
#include "test_tokenizer_real.moc"
