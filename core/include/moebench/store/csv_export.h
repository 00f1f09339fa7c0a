#pragma once
// export_csv: one stored run as CSV files (RFC 4180 quoting: a field with a comma, quote, CR,
// LF or leading/trailing space is quoted and its quotes doubled; "\n" line ends; a header
// row in every file; numbers in shortest round-trip form), for pandas, R or a spreadsheet.
//
//   run.csv      id,uuid,name,experiment,status,strategy,topology,git_rev,host,pid,
//                start_time,end_time,ranks,config_json        (one row)
//   params.csv   key,value
//   tags.csv     key,value
//   metrics.csv  step,key,value,timestamp
//   spans.csv    step,rank,stream,name,category,start,duration,bytes,peer,layer,expert,flops,chunk
//   traffic.csv  step,rank,peer,link,bytes
//   routing.csv  step,layer,source_rank,expert,tokens
//
// Times are seconds (start_time/end_time/timestamp: unix; span start: from the rank's epoch);
// steps are the store's, 1-based.
//
// `dir` is created when missing. Existing files of these names are refused (ExportRefused,
// before anything is written) unless `replace`. All or nothing: the files are written under
// temporary names and renamed into place once all are complete; on any failure the temporary
// files, the files the export added and the folders it created are removed again. Throws
// std::runtime_error naming the file or folder (StoreError from the store).
#include <stdexcept>
#include <string>

#include "moebench/store/run_store.h"

namespace moebench {

// "out/run.csv already exists (and 6 more); nothing was written"
class ExportRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void export_csv(const RunStore& store, const RunInfo& run, const std::string& dir, bool replace = false);

// One CSV field, quoted when needed.
std::string csv_field(const std::string& value);

}  // namespace moebench
