// ctest-labels: unit
// train/safetensors: round trip, byte layout, and clear errors for corrupt files.
#include <QTemporaryDir>
#include <QtTest>

#include <bit>
#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "moebench/train/safetensors.h"

#include "test_support.h"

using namespace moebench;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), (std::streamsize)bytes.size());
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

uint64_t le64(const std::string& s, size_t at = 0) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= (uint64_t)(unsigned char)s[at + k] << (8 * k);
  return v;
}

std::string prefix(uint64_t n) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[k] = (char)((n >> (8 * k)) & 0xff);
  return s;
}

// A hand-made file: length prefix, header text as given, then `data_bytes` bytes of data.
std::string make_file(const std::string& header, size_t data_bytes) {
  return prefix(header.size()) + header + std::string(data_bytes, '\x01');
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (float)i - 0.37f * (float)(i % 7);
  return v;
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT

 private slots:
  void round_trip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("model.safetensors").toStdString();
    const auto a = ramp(3 * 5, 0.5f);
    auto b = ramp(7, -1.25f);
    b[0] = std::numeric_limits<float>::denorm_min();
    b[1] = -0.0f;
    b[2] = std::numeric_limits<float>::infinity();
    b[3] = std::numeric_limits<float>::quiet_NaN();
    const auto c = ramp(2 * 3 * 4, 1e-3f);
    const float scalar = 3.5f;
    const std::vector<TensorRef> tensors = {
        {"wte", {3, 5}, a.data()},
        {"blocks.0.ln1.b", {7}, b.data()},
        {"blocks.0.moe.experts.1.w1", {2, 3, 4}, c.data()},
        {"step_scale", {}, &scalar},
        {"empty", {0, 4}, nullptr},
    };
    const std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "123"}, {"config", "{\"a\": 1}"}};
    write_safetensors(path, tensors, meta);
    QVERIFY(!QFile::exists(QString::fromStdString(path + ".tmp")));

    const SafetensorsFile f = read_safetensors(path);
    QVERIFY(f.metadata == meta);
    QCOMPARE(f.tensors.size(), tensors.size());
    for (const TensorRef& t : tensors) {
      const auto it = f.tensors.find(t.name);
      QVERIFY2(it != f.tensors.end(), t.name.c_str());
      QVERIFY(it->second.shape == t.shape);
      size_t n = 1;
      for (int64_t d : t.shape) n *= (size_t)d;
      QCOMPARE(it->second.data.size(), n);
      if (n) QVERIFY(std::memcmp(it->second.data.data(), t.data, n * 4) == 0);  // bitwise, NaN included
    }

    // Overwriting an existing file works (rename over it).
    write_safetensors(path, {tensors[0]});
    QCOMPARE(read_safetensors(path).tensors.size(), (size_t)1);
    QVERIFY(read_safetensors(path).metadata.empty());
  }

  void byte_layout() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("layout.safetensors").toStdString();
    const auto a = ramp(6, 1.0f), b = ramp(3, 2.0f), c = ramp(5, 3.0f);
    // Deliberately not in alphabetical order: the file keeps the given order.
    write_safetensors(path, {{"zeta", {2, 3}, a.data()}, {"alpha", {3}, b.data()}, {"mid", {5}, c.data()}},
                      {{"k", "v"}});
    const std::string bytes = read_bytes(path);
    const uint64_t n = le64(bytes);
    QCOMPARE(n % 8, (uint64_t)0);
    QVERIFY(8 + n <= bytes.size());
    const std::string header = bytes.substr(8, n);
    QVERIFY(header.front() == '{');
    const auto last = header.find_last_not_of(' ');
    QCOMPARE(header[last], '}');  // padding is spaces only
    const nlohmann::json j = nlohmann::json::parse(header);
    QCOMPARE(j["__metadata__"]["k"].get<std::string>(), std::string("v"));
    QCOMPARE(j["zeta"]["dtype"].get<std::string>(), std::string("F32"));
    QVERIFY(j["zeta"]["shape"] == nlohmann::json::array({2, 3}));
    QVERIFY(j["zeta"]["data_offsets"] == nlohmann::json::array({0, 24}));
    QVERIFY(j["alpha"]["data_offsets"] == nlohmann::json::array({24, 36}));
    QVERIFY(j["mid"]["data_offsets"] == nlohmann::json::array({36, 56}));
    QVERIFY(header.find("\"zeta\"") < header.find("\"alpha\""));
    QCOMPARE(bytes.size(), (size_t)(8 + n + 56));
    // Raw little-endian float bytes at the data offsets.
    for (size_t i = 0; i < 3; ++i) {
      const auto* p = (const unsigned char*)bytes.data() + 8 + n + 24 + 4 * i;
      const uint32_t v = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
      QCOMPARE(v, std::bit_cast<uint32_t>(b[i]));
    }
  }

  void write_errors() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.safetensors").toStdString();
    const float x[2] = {1, 2};
    QVERIFY(test::error_message<CheckpointError>([&] { write_safetensors(path, {{"a", {2}, x}, {"a", {2}, x}}); }).contains("duplicate"));
    QVERIFY(test::error_message<CheckpointError>([&] { write_safetensors(path, {{"a", {-2}, x}}); }).contains("invalid shape"));
    const std::string bad = dir.filePath("no/such/dir/x.safetensors").toStdString();
    QVERIFY(test::error_message<CheckpointError>([&] { write_safetensors(bad, {{"a", {2}, x}}); }).contains("x.safetensors.tmp"));
  }

  void corrupt_files_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("missing file") << "missing" << "no such file";
    QTest::newRow("shorter than prefix") << "tiny" << "shorter than the 8-byte header length";
    QTest::newRow("header length > file") << "long_header" << "is larger than the file";
    QTest::newRow("truncated data") << "truncated" << "out of range (the data section is";
    QTest::newRow("bad JSON") << "bad_json" << "header is not valid JSON";
    QTest::newRow("header not object") << "array" << "header is not a JSON object";
    QTest::newRow("offsets out of range") << "offsets_range" << "data_offsets [0, 64] out of range";
    QTest::newRow("offsets reversed") << "offsets_reversed" << "data_offsets [16, 8] out of range";
    QTest::newRow("offsets overlap") << "overlap" << "\"a\" and \"b\" overlap";
    QTest::newRow("offsets != shape*4") << "size_mismatch" << "span 12 bytes, but shape [2, 2] of F32 needs 16";
    QTest::newRow("F16 dtype") << "f16" << "unsupported dtype F16 (only F32 is supported)";
    QTest::newRow("missing shape") << "no_shape" << "has no shape array";
    QTest::newRow("metadata not strings") << "meta" << "__metadata__ value for \"n\" is not a string";
    QTest::newRow("empty tensor name") << "empty_name" << "a tensor has an empty name";
  }

  void corrupt_files() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string name = "bad_" + kind.toStdString() + ".safetensors";
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    const std::string ok_a = R"("a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]})";
    std::string file;
    if (kind == "tiny") {
      file = "abc";
    } else if (kind == "long_header") {
      file = prefix(1000) + "{}";
    } else if (kind == "truncated") {
      const float x[8] = {};
      write_safetensors(path, {{"a", {8}, x}});
      file = read_bytes(path);
      file.resize(file.size() - 5);
    } else if (kind == "bad_json") {
      file = make_file(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16])", 16);
    } else if (kind == "array") {
      file = make_file("[1, 2]  ", 0);
    } else if (kind == "offsets_range") {
      file = make_file(R"({"a": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}})", 16);
    } else if (kind == "offsets_reversed") {
      file = make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [16, 8]}})", 16);
    } else if (kind == "overlap") {
      file = make_file("{" + ok_a + R"(, "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 24);
    } else if (kind == "size_mismatch") {
      file = make_file(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", 16);
    } else if (kind == "f16") {
      file = make_file(R"({"a": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}})", 8);
    } else if (kind == "no_shape") {
      file = make_file(R"({"a": {"dtype": "F32", "data_offsets": [0, 16]}})", 16);
    } else if (kind == "meta") {
      file = make_file(R"({"__metadata__": {"n": 5}, )" + ok_a + "}", 16);
    } else if (kind == "empty_name") {
      file = make_file(R"({"": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
    }
    if (kind != "missing") write_bytes(path, file);
    const QString msg = test::error_message<CheckpointError>([&] { read_safetensors(path); });
    QVERIFY2(msg.contains(QString::fromStdString(name)), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
    if (kind == "missing") return;
    // The same bytes in memory: the same message, under the name given.
    const std::vector<uint8_t> bytes(file.begin(), file.end());
    const QString mem = test::error_message<CheckpointError>([&] { parse_safetensors(bytes, name); });
    QCOMPARE(mem, msg.mid(msg.indexOf(QString::fromStdString(name))));
  }

  void hand_made_file_reads() {
    // A minimal file as another tool might write it (no padding, keys in any order).
    QTemporaryDir dir;
    const std::string path = dir.filePath("ext.safetensors").toStdString();
    std::string data(8, '\0');
    const float v[2] = {1.5f, -2.0f};
    std::memcpy(data.data(), v, 8);
    write_bytes(path, prefix(58) + R"({"x":{"data_offsets":[0,8],"shape":[2],"dtype":"F32"}}    )" + data);
    QCOMPARE(le64(read_bytes(path)), (uint64_t)58);
    const SafetensorsFile f = read_safetensors(path);
    QCOMPARE(f.tensors.at("x").data[0], 1.5f);
    QCOMPARE(f.tensors.at("x").data[1], -2.0f);
  }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
