#pragma once
// Internal RAII wrapper around the sqlite3 C API for the run store:
//   Db   one connection (sqlite3_open_v2 .. sqlite3_close_v2),
//   Stmt one prepared statement with bind / step / column helpers (Stmt::Scope resets it),
//   Txn  BEGIN IMMEDIATE .. COMMIT, rolled back when left without commit() (an exception).
// Every sqlite3 error becomes a StoreError "<file>: <operation>: <sqlite3_errmsg>".
#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "moebench/store/run_store.h"

namespace moebench::store_detail {

class Db {
 public:
  Db() = default;
  ~Db() { close(); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // sqlite3_open_v2(path, flags); throws StoreError (the handle is closed again on failure).
  // With `uri_query` ("mode=ro", "immutable=1") the file is opened as the URI
  // file:<path, percent-encoded>?<uri_query>; path() stays the plain path.
  void open(const std::string& path, int flags, const std::string& uri_query = "");
  void close();
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs SQL without parameters (pragmas, migration scripts, BEGIN/COMMIT).
  void exec(const std::string& sql, const std::string& what);
  // Runs a pragma / query that returns one value and gives it as text ("" for no row / NULL).
  std::string query_text(const std::string& sql, const std::string& what);
  int64_t query_int(const std::string& sql, const std::string& what);

  int64_t changes() const { return sqlite3_changes64(db_); }
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

  // StoreError "<path>: <what>: <sqlite3_errmsg>" (sqlite3_errstr(rc) when there is no handle).
  [[noreturn]] void fail(const std::string& what, int rc) const;
  // The primary result code of the last error thrown by fail() (SQLITE_OK when none).
  int last_error() const { return last_rc_; }

 private:
  sqlite3* db_ = nullptr;
  mutable int last_rc_ = SQLITE_OK;
  std::string path_;
};

class Stmt {
 public:
  Stmt(Db& db, const std::string& sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Parameters are 1-based. A NaN double is stored by SQLite as NULL (read back by f64_or_nan).
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, (int64_t)v); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, const std::string& v);
  Stmt& bind_null(int i);
  // Binds a column value of another statement as it is (its type and bytes), for copying rows.
  Stmt& bind_value(int i, const sqlite3_value* v);

  bool step();  // true: a row is ready; false: done. Throws StoreError on any error.
  void run();   // steps to completion (INSERT / UPDATE / DELETE) and resets
  void reset(); // sqlite3_reset + clear bindings; never throws

  bool is_null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  int i32(int c) const { return sqlite3_column_int(st_, c); }
  double f64(int c) const { return sqlite3_column_double(st_, c); }
  double f64_or_nan(int c) const;
  std::string text(int c) const;
  const sqlite3_value* value(int c) const { return sqlite3_column_value(st_, c); }

  // Resets the statement when the scope ends, so a cached statement never holds a read
  // snapshot (which would pin the WAL) or a half-bound parameter set.
  class Scope {
   public:
    explicit Scope(Stmt& s) : s_(s) {}
    ~Scope() { s_.reset(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Stmt& s_;
  };

 private:
  [[noreturn]] void fail(int rc) const;
  Db& db_;
  sqlite3_stmt* st_ = nullptr;
  std::string what_;  // the start of the SQL, for error messages
};

// BEGIN IMMEDIATE (takes the write lock up front: no deadlock upgrading a read to a write).
class Txn {
 public:
  explicit Txn(Db& db, const std::string& what);
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit();

 private:
  Db& db_;
  std::string what_;
  bool open_ = false;
};

}  // namespace moebench::store_detail
