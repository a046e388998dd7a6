#include "common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

extern char** environ;

namespace linnet {

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::runtime_error("runProcess: no program");
  int pipeFds[2];
  if (pipe(pipeFds) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string out = options.stdoutFile.empty() ? "/dev/null" : options.stdoutFile.string();
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
  posix_spawn_file_actions_addclose(&actions, pipeFds[1]);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // This environment, with LINNET_PARENT_PID set to us (dieWithParent).
  std::string parent = std::string(kParentPidVariable) + "=" + std::to_string(getpid());
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with(std::string(kParentPidVariable) + "=")) env.push_back(*e);
  env.push_back(parent.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (rc != 0) {
    close(pipeFds[0]);
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  // Read stderr to its end before waiting, so a chatty child never blocks on a full pipe.
  ProcessResult result;
  char buffer[4096];
  for (ssize_t n; (n = read(pipeFds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    result.errors.append(buffer, static_cast<size_t>(n));
  }
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return result;
}

void dieWithParent() {
  const char* parent = std::getenv(kParentPidVariable);
  if (!parent) return;
  char* end = nullptr;
  long pid = std::strtol(parent, &end, 10);
  if (*end != '\0' || pid != static_cast<long>(getppid())) return;  // not started by runProcess
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before the line above: then we are adopted.
  if (static_cast<long>(getppid()) != pid) _exit(128 + SIGKILL);
}

}  // namespace linnet
