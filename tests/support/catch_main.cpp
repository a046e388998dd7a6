// The default main of the Catch2 test executables; those with their own
// main (cuda_device_main.cpp) link linnet_catch_session only.
#include "catch_session.h"

int main(int argc, char** argv) { return linnet::test::runCatchSession(argc, argv); }
