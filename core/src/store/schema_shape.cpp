// check_schema_shape: a store's tables against those its schema version defines. The expected
// tables come from running migrations 1..version on an in-memory database, so there is no second
// copy of the schema that could drift from the migrations.
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "schema.h"

namespace moebench::store_detail {

namespace {

// Table -> its columns in order: (name, "TYPE [NOT NULL] [DEFAULT x] [PRIMARY KEY]").
using Columns = std::vector<std::pair<std::string, std::string>>;
using Shape = std::map<std::string, Columns>;

Shape read_shape(Db& db) {
  std::vector<std::string> tables;
  {
    Stmt s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'");
    while (s.step()) tables.push_back(s.text(0));
  }
  Shape out;
  Stmt s(db, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)");
  for (const std::string& table : tables) {
    Stmt::Scope scope(s);
    s.bind(1, table);
    Columns& columns = out[table];
    while (s.step()) {
      std::string decl = s.text(1);
      if (s.i64(2)) decl += " NOT NULL";
      if (!s.is_null(3)) decl += " DEFAULT " + s.text(3);
      if (s.i64(4)) decl += " PRIMARY KEY";
      columns.emplace_back(s.text(0), decl);
    }
  }
  return out;
}

const Shape& expected_shape(int version) {
  static std::mutex mu;
  static std::map<int, Shape> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(version);
  if (it == cache.end()) {
    Db memory;
    memory.open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    apply_migrations(memory, 0, version);
    it = cache.emplace(version, read_shape(memory)).first;
  }
  return it->second;
}

const std::string* find_column(const Columns& columns, const std::string& name) {
  for (const auto& [n, decl] : columns)
    if (n == name) return &decl;
  return nullptr;
}

}  // namespace

void check_schema_shape(Db& db, int version) {
  const Shape& want = expected_shape(version);
  const Shape have = read_shape(db);
  std::vector<std::string> problems;
  for (const auto& [table, columns] : want) {
    const auto found = have.find(table);
    if (found == have.end()) {
      problems.push_back("table " + table + " missing");
      continue;
    }
    for (const auto& [name, decl] : columns) {
      const std::string* actual = find_column(found->second, name);
      if (!actual) problems.push_back("column " + table + "." + name + " missing");
      else if (*actual != decl)
        problems.push_back("column " + table + "." + name + " is " + *actual + ", not " + decl);
    }
    for (const auto& [name, decl] : found->second)
      if (!find_column(columns, name)) problems.push_back("column " + table + "." + name + " unexpected");
  }
  if (problems.empty()) return;
  std::string detail;
  for (size_t i = 0; i < problems.size() && i < 4; ++i) detail += (i ? "; " : "") + problems[i];
  if (problems.size() > 4) detail += "; and " + std::to_string(problems.size() - 4) + " more";
  throw StoreError(db.path() + ": schema damaged (" + detail + "); left unchanged");
}

}  // namespace moebench::store_detail
