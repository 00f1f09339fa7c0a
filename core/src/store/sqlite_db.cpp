// Internal sqlite3 wrapper of the run store (see sqlite_db.h).
#include "sqlite_db.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace moebench::store_detail {

namespace {

// "INSERT INTO spans (run, step, ..." -> at most 60 characters, whitespace collapsed.
std::string sql_label(const std::string& sql) {
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
    if (out.size() >= 60) {
      out += "...";
      break;
    }
  }
  return out;
}

// "file:" URI of a path: every byte but unreserved characters and '/' percent-encoded; an
// absolute path after an empty authority ("file:///a/b"), so "//a/b" is no host name.
std::string file_uri(const std::string& path, const std::string& query) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = path.starts_with('/') ? "file://" : "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += (char)c;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "?" + query;
}

}  // namespace

// --- Db ---

void Db::open(const std::string& path, int flags, const std::string& uri_query) {
  close();
  path_ = path;
  const std::string name = uri_query.empty() ? path : file_uri(path, uri_query);
  if (!uri_query.empty()) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close();
    last_rc_ = rc & 0xff;
    throw StoreError(path_ + ": open: " + msg);
  }
  sqlite3_extended_result_codes(db_, 0);
}

void Db::close() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

void Db::fail(const std::string& what, int rc) const {
  last_rc_ = rc & 0xff;
  std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw StoreError(path_ + ": " + what + ": " + msg);
}

void Db::exec(const std::string& sql, const std::string& what) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    last_rc_ = rc & 0xff;
    throw StoreError(path_ + ": " + what + ": " + msg);
  }
}

std::string Db::query_text(const std::string& sql, const std::string&) {
  Stmt s(*this, sql);
  if (!s.step() || s.is_null(0)) return "";
  return s.text(0);
}

int64_t Db::query_int(const std::string& sql, const std::string& what) {
  Stmt s(*this, sql);
  if (!s.step()) fail(what + " (no result)", SQLITE_ERROR);
  return s.i64(0);
}

// --- Stmt ---

Stmt::Stmt(Db& db, const std::string& sql) : db_(db), what_(sql_label(sql)) {
  int rc = sqlite3_prepare_v3(db.handle(), sql.c_str(), (int)sql.size() + 1, SQLITE_PREPARE_PERSISTENT,
                              &st_, nullptr);
  if (rc != SQLITE_OK) {
    st_ = nullptr;
    db_.fail("prepare " + what_, rc);
  }
}

Stmt::~Stmt() {
  if (st_) sqlite3_finalize(st_);
}

void Stmt::fail(int rc) const { db_.fail(what_, rc); }

Stmt& Stmt::bind(int i, int64_t v) {
  int rc = sqlite3_bind_int64(st_, i, v);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  int rc = std::isnan(v) ? sqlite3_bind_null(st_, i) : sqlite3_bind_double(st_, i, v);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Stmt& Stmt::bind(int i, const std::string& v) {
  int rc = sqlite3_bind_text64(st_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  int rc = sqlite3_bind_null(st_, i);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Stmt& Stmt::bind_value(int i, const sqlite3_value* v) {
  int rc = sqlite3_bind_value(st_, i, v);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(rc);
}

void Stmt::run() {
  Scope scope(*this);
  while (step()) {
  }
}

void Stmt::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

double Stmt::f64_or_nan(int c) const {
  return is_null(c) ? std::numeric_limits<double>::quiet_NaN() : f64(c);
}

std::string Stmt::text(int c) const {
  const unsigned char* p = sqlite3_column_text(st_, c);
  if (!p) return "";
  return std::string(reinterpret_cast<const char*>(p), (size_t)sqlite3_column_bytes(st_, c));
}

// --- Txn ---

Txn::Txn(Db& db, const std::string& what) : db_(db), what_(what) {
  db_.exec("BEGIN IMMEDIATE", what_ + ": begin");
  open_ = true;
}

Txn::~Txn() {
  // Left by an exception: undo. An error may already have rolled back; ignore that.
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Txn::commit() {
  db_.exec("COMMIT", what_ + ": commit");
  open_ = false;
}

}  // namespace moebench::store_detail
