#pragma once
// The NCCL communicators of this process watched for asynchronous errors (a peer that went
// away, a failed network link): NCCL's kernels then spin forever, and so would every host wait
// behind them (a stream sync, an event sync). A background thread polls ncclCommGetAsyncError of
// every watched communicator every 100 ms; on an error it aborts that communicator
// (ncclCommAbort releases its kernels, so the host's waits return) and keeps the message, which
// the communicator's next operation throws (failure()) — the rank then stops through its usual
// error path (the run marked FAILED, the launcher stopping the others). A rank whose main
// thread makes no further NCCL call within 30 s is ended with the message and exit 1.
#include <nccl.h>

#include <string>

namespace moebench::nccl_watch {

// `who`: how the message names the communicator ("rank 3 (GPU 1) in a group of 4 ranks").
void add(ncclComm_t comm, const std::string& who);
void remove(ncclComm_t comm);  // before ncclCommDestroy / ncclCommAbort by its owner
// The message of the error that aborted `comm`, or "" while it is healthy.
std::string failure(ncclComm_t comm);

}  // namespace moebench::nccl_watch
