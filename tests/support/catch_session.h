// Runs the Catch2 session of a test executable. Catch2's implementation lives
// in catch_session.cpp alone; its Session class is only declared there.
#pragma once

namespace linnet::test {
int runCatchSession(int argc, char** argv);
}
