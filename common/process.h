// Running another program by its argument vector (posix_spawn, no shell, so
// nothing is quoted or expanded): linnetc from the runtime, clang from
// linnetc. Its stderr is captured unchanged for the caller's error message.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace linnet {

struct ProcessResult {
  int exitCode = -1;   // the exit status; 128 + N when killed by signal N
  std::string errors;  // everything it wrote to stderr
};

struct ProcessOptions {
  // Where its stdout goes: empty discards it; else a file (truncated).
  std::filesystem::path stdoutFile;
};

// Runs argv[0] (looked up in PATH when it has no '/') with `argv` and waits.
// Throws std::runtime_error when it cannot be started at all. The child's
// environment names this process in LINNET_PARENT_PID.
ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});

inline constexpr const char* kParentPidVariable = "LINNET_PARENT_PID";

// In a program runProcess started (linnetc under the runtime): be killed
// when that parent dies, so a killed `linnet` leaves no compile running
// (Linux's PR_SET_PDEATHSIG). Does nothing in a program started otherwise.
void dieWithParent();

}  // namespace linnet
