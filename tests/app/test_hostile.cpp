// Hostile input through sdw-cli: every case is a small input generated here
// from the stories260K sample model (deeply nested JSON in each file that
// holds JSON, absurd shapes in config.json, tokenizer patterns that
// backtrack without end, a run file whose settings_json nests 30,000 deep).
// Each command must exit cleanly with status 1 and a one-line message
// naming the file within 10 s: never a signal, never a timeout. The bounds
// are in docs/model-runtime.md, "Hostile input".

#include "core/provenance.h"
#include "core/runstore.h"

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kStories = fs::path(SDW_SOURCE_DIR) / "samples" / "model" / "stories260K";

std::string readAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeAll(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

std::string deepArrays(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }
std::string deepObjects(std::size_t levels) {
    std::string s;
    for (std::size_t i = 0; i < levels; ++i) s += "{\"a\":";
    return s + "1" + std::string(levels, '}');
}

// `file` (JSON) with `key` set to `raw` JSON text, which may be nested far
// deeper than nlohmann would let us build it as a value.
std::string withRaw(const fs::path& file, const std::string& key, const std::string& raw) {
    json j = json::parse(readAll(file));
    j[key] = "@@HOSTILE@@";
    std::string text = j.dump(1);
    text.replace(text.find("\"@@HOSTILE@@\""), 13, raw);
    return text;
}

// A Split pre-tokenizer with `pattern`.
std::string withPattern(const std::string& pattern) {
    return withRaw(kStories / "tokenizer.json", "pre_tokenizer",
                   json{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}}.dump());
}

// model.safetensors with its __metadata__ replaced by `raw`.
std::string safetensorsWithMetadata(const std::string& raw) {
    const std::string file = readAll(kStories / "model.safetensors");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[static_cast<std::size_t>(i)]);
    json header = json::parse(file.substr(8, n));
    header["__metadata__"] = "@@HOSTILE@@";
    std::string h = header.dump();
    h.replace(h.find("\"@@HOSTILE@@\""), 13, raw);
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xFF);
    return out + h + file.substr(8 + n);
}

// A finished run file whose /provenance@settings_json is `settings`
// (written with HDF5 directly: the run store refuses to write it).
void writeRunWithSettings(const fs::path& run, const std::string& settings) {
    {
        auto w = sdw::runstore::RunWriter::create(run, sdw::Provenance::capture(), "test");
        (void)w.commit();
    }
    const hid_t f = H5Fopen(run.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    QVERIFY(f >= 0);
    const hid_t g = H5Gopen2(f, "/provenance", H5P_DEFAULT);
    QVERIFY(H5Adelete(g, "settings_json") >= 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, settings.size());
    H5Tset_cset(type, H5T_CSET_UTF8);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(g, "settings_json", type, space, H5P_DEFAULT, H5P_DEFAULT);
    QVERIFY(a >= 0);
    QVERIFY(H5Awrite(a, type, settings.data()) >= 0);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    H5Gclose(g);
    H5Fclose(f);
}

}  // namespace

class TestHostile : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

    // A copy of the stories260K folder as `name`, `file` replaced by `bytes`.
    QString model(const QString& name, const std::string& file, const std::string& bytes) {
        const fs::path dir = fs::path(tmp_.path().toStdString()) / name.toStdString();
        fs::create_directories(dir);
        for (const auto& e : fs::directory_iterator(kStories))
            if (e.path().filename() != "IMPORT.md")
                fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
        if (!file.empty()) writeAll(dir / file, bytes);
        return QString::fromStdString(dir.string());
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY2(QFileInfo::exists(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli")), "build sdw-cli first");
    }

    void refused_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("file");     // the message names it
        QTest::addColumn<QString>("message");  // and says this

        const std::string cfg = (kStories / "config.json").string();
        const std::string tok = (kStories / "tokenizer.json").string();
        const QString deep = QStringLiteral("nested deeper than 64 levels");
        auto modelCase = [&](const char* row, const QString& dir, const char* file, const QString& message,
                             const QStringList& commands) {
            for (const QString& c : commands) {
                QStringList args;
                if (c == "model-info") args = {c, dir};
                else if (c == "tokenize") args = {c, "--model", dir, "--text", "hello"};
                else args = {c, "--model", dir, "--prompt", "hello", "--max-new-tokens", "0"};
                QTest::addRow("%s: %s", row, qPrintable(c)) << args << QString(dir + "/" + file) << message;
            }
        };
        const QStringList all = {"model-info", "generate"};

        // A checkpoint path naming a file, or nothing: refused as such, not as a folder without
        // config.json, by every command that takes a checkpoint folder.
        {
          const QString file = model("f0", "", "") + "/config.json";
          const QString missing = tmp_.path() + "/no-such-checkpoint";
          const QString out = tmp_.path() + "/out-never-written";
          for (const QString& path : {file, missing}) {
            const QString message =
                path == file ? QStringLiteral(": not a folder") : QStringLiteral(": no such folder");
            const QByteArray what = path == file ? QByteArray("a file") : QByteArray("missing");
            const QList<QStringList> commands = {
                {"model-info", path},
                {"generate", "--model", path, "--prompt", "hello", "--max-new-tokens", "0"},
                {"prune", "--model", path, "--calibration", file, "--method", "magnitude", "--pattern", "2:4", "--out",
                 out},
                {"eval", "--dense", path, "--models", path},
                {"calibrate", "--source", "fixed", "--model", path, "--corpus", file, "--tokens", "8", "--out",
                 out + ".sdw.h5"},
            };
            for (const QStringList& args : commands) {
              const QByteArray command = args.first().toUtf8();
              QTest::addRow("checkpoint %s: %s", what.constData(), command.constData()) << args << path << message;
            }
          }
        }

        // config.json and generation_config.json
        modelCase("config.json nested arrays", model("c1", "config.json", withRaw(cfg, "rope_scaling", deepArrays(50000))),
                  "config.json", deep, all);
        modelCase("config.json nested objects", model("c2", "config.json", withRaw(cfg, "architectures", deepObjects(50000))),
                  "config.json", deep, all);
        modelCase("num_hidden_layers 2^31", model("c3", "config.json", withRaw(cfg, "num_hidden_layers", "2147483648")),
                  "config.json", "num_hidden_layers = 2147483648 is out of range", all);
        modelCase("num_hidden_layers 2^40", model("c4", "config.json", withRaw(cfg, "num_hidden_layers", "1099511627776")),
                  "config.json", "num_hidden_layers = 1099511627776 is out of range", all);
        modelCase("vocab_size 2^62", model("c5", "config.json", withRaw(cfg, "vocab_size", "4611686018427387904")),
                  "config.json", "vocab_size = 4611686018427387904 is out of range", all);
        {
            json big = json::parse(readAll(kStories / "config.json"));
            big["hidden_size"] = 65536;
            big["intermediate_size"] = 262144;
            big["num_hidden_layers"] = 1024;
            big["num_attention_heads"] = 512;
            big["num_key_value_heads"] = 512;
            big["head_dim"] = 128;
            modelCase("shape over the parameter bound", model("c6", "config.json", big.dump()), "config.json",
                      "parameters, over the", all);
        }
        modelCase("max_position_embeddings 2^40",
                  model("c7", "config.json", withRaw(cfg, "max_position_embeddings", "1099511627776")), "config.json",
                  "max_position_embeddings = 1099511627776 is out of range", all);
        modelCase("generation_config.json nested",
                  model("g1", "generation_config.json",
                        withRaw((kStories / "generation_config.json").string(), "eos_token_id", deepArrays(50000))),
                  "generation_config.json", deep, all);

        // tokenizer.json and tokenizer_config.json
        for (const char* section : {"normalizer", "pre_tokenizer", "decoder", "post_processor"}) {
            modelCase((std::string("tokenizer.json ") + section + " nested").c_str(),
                      model(QString("t-") + section, "tokenizer.json", withRaw(tok, section, deepArrays(50000))),
                      "tokenizer.json", deep, {"tokenize", "generate"});
        }
        {
            std::string seq;
            for (int i = 0; i < 20000; ++i) seq += R"({"type": "Sequence", "normalizers": [)";
            seq += R"({"type": "NFC"})";
            for (int i = 0; i < 20000; ++i) seq += "]}";
            modelCase("tokenizer.json normalizer Sequence 20000 deep", model("t-seq", "tokenizer.json", withRaw(tok, "normalizer", seq)),
                      "tokenizer.json", deep, {"tokenize"});
            json dec = {{"type", "ByteFallback"}};
            for (int i = 0; i < 12; ++i) dec = {{"type", "Sequence"}, {"decoders", json::array({dec})}};
            modelCase("tokenizer.json decoder Sequence 12 deep",
                      model("t-dec", "tokenizer.json", withRaw(tok, "decoder", dec.dump())), "tokenizer.json",
                      "decoder: Sequence nested deeper than 8 levels", {"tokenize"});
        }
        modelCase("tokenizer_config.json nested",
                  model("tc", "tokenizer_config.json",
                        withRaw((kStories / "tokenizer_config.json").string(), "bos_token", deepObjects(50000))),
                  "tokenizer_config.json", deep, {"tokenize", "generate"});

        // Patterns that backtrack without end, on texts of a few thousand characters and a few dozen
        // (texts that hold the literal a match needs: without it Oniguruma answers "no match" at once).
        const std::vector<std::tuple<const char*, const char*, const char*>> patterns = {
            {"(a|a)*$", "a", "b"}, {"(a+)+b", "a", "cb"}, {"(.*)*x", "y", "\nx"}};
        int k = 0;
        for (const auto& [pattern, unit, tail] : patterns) {
            const QString dir = model(QString("re%1").arg(k++), "tokenizer.json", withPattern(pattern));
            for (int n : {28, 4000}) {
                const QString text = QString::fromUtf8(unit).repeated(n) + QString::fromUtf8(tail);
                QTest::addRow("pattern %s on %d characters: tokenize", pattern, n)
                    << QStringList{"tokenize", "--model", dir, "--text", text} << QString(dir + "/tokenizer.json")
                    << QString("pre_tokenizer: regex ") + pattern;
                QTest::addRow("pattern %s on %d characters: generate", pattern, n)
                    << QStringList{"generate", "--model", dir, "--prompt", text, "--max-new-tokens", "0"}
                    << QString(dir + "/tokenizer.json") << QString("pre_tokenizer: regex ") + pattern;
            }
        }
        {
            const QString dir = model("re-nest", "tokenizer.json",
                                      withPattern(std::string(20, '(') + "a" + std::string(5000, '?') + std::string(20, ')')));
            modelCase("pattern with stacked quantifiers", dir, "tokenizer.json", "quantifiers nested too deep", {"tokenize"});
        }

        // The safetensors header and its index
        modelCase("safetensors __metadata__ nested",
                  model("st", "model.safetensors", safetensorsWithMetadata(deepObjects(50000))), "model.safetensors",
                  deep, {"generate"});
        {
            const QString dir = model("idx", "", "");
            writeAll(fs::path(dir.toStdString()) / "model.safetensors.index.json",
                     "{\"weight_map\": " + deepArrays(50000) + "}");
            modelCase("model.safetensors.index.json nested", dir, "model.safetensors.index.json", deep, {"generate"});
        }

        // A run file whose settings_json nests 30,000 deep (60 kB: an HDF5 compact attribute).
        const fs::path ws = fs::path(tmp_.path().toStdString()) / "workspace";
        fs::create_directories(ws);
        const fs::path run = ws / "deep.sdw.h5";
        writeRunWithSettings(run, deepArrays(30000));
        const QString r = QString::fromStdString(run.string());
        QTest::newRow("run settings_json nested: info") << QStringList{"info", r} << r << deep;
        QTest::newRow("run settings_json nested: info --json") << QStringList{"info", r, "--json"} << r << deep;
    }

    void refused() {
        QFETCH(QStringList, args);
        QFETCH(QString, file);
        QFETCH(QString, message);
        QProcess p;
        p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"), args);
        QVERIFY(p.waitForStarted());
        if (!p.waitForFinished(10000)) {
            p.kill();
            p.waitForFinished();
            QFAIL("no answer within 10 s");
        }
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);  // not a signal
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.endsWith('\n') && err.count('\n') == 1, qPrintable("not one line:\n" + err.left(2000)));
        QVERIFY2(err.contains(file), qPrintable(err.left(2000)));
        QVERIFY2(err.contains(message), qPrintable(err.left(2000)));
    }

    // runs lists the run file as unreadable, with the reason, and --strict
    // makes that exit 1.
    void runsListsHostileRun() {
        const QString ws = tmp_.path() + "/workspace";
        QVERIFY(QFileInfo::exists(ws + "/deep.sdw.h5"));  // made by refused_data
        for (const bool strict : {false, true}) {
            QStringList args = {"runs", ws, "--json"};
            if (strict) args << "--strict";
            QProcess p;
            p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"), args);
            QVERIFY(p.waitForFinished(10000));
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QCOMPARE(p.exitCode(), strict ? 1 : 0);
            const json out = json::parse(p.readAllStandardOutput().toStdString());
            QCOMPARE(out.at("runs").size(), std::size_t{1});
            const std::string error = out.at("runs").at(0).value("error", "");
            QVERIFY2(error.find("deep.sdw.h5") != std::string::npos, error.c_str());
            QVERIFY2(error.find("settings_json: JSON nested deeper than 64 levels") != std::string::npos, error.c_str());
        }
    }

    // The sample model itself still loads, tokenizes and generates.
    void sampleStillWorks() {
        for (const QStringList& args :
             {QStringList{"model-info", QString::fromStdString(kStories.string())},
              QStringList{"tokenize", "--model", QString::fromStdString(kStories.string()), "--text", "Once upon a time"},
              QStringList{"generate", "--model", QString::fromStdString(kStories.string()), "--prompt", "Once",
                          "--max-new-tokens", "4"}}) {
            QProcess p;
            p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"), args);
            QVERIFY(p.waitForFinished(30000));
            QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
                     qPrintable(args.join(' ') + ": " + QString::fromUtf8(p.readAllStandardError())));
        }
    }
};

QTEST_GUILESS_MAIN(TestHostile)
#include "test_hostile.moc"
