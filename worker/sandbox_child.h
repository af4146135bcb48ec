#pragma once
// The sandbox child's main loop (worker/sandbox.h): `fusetune-codegen sandbox-child`. It compiles
// and times kernels, so it lives with the code generator, in fusetune_worker.
namespace fusetune {

// Reads jobs as JSON lines on stdin and answers each on stdout until stdin ends. Returns the exit
// code.
int RunSandboxChild();

}  // namespace fusetune
