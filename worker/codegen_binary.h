#pragma once
// Where the executable with the code generator is. fusetune is two executables installed side by
// side (docs/architecture.md, "Start-up and linking"): `fusetune`, without LLVM, which users run,
// and `fusetune-codegen`, which compiles and times kernels: the sandbox child and the `run` and
// `kernel` commands, which `fusetune` execs with its own arguments.
#include <string>

namespace fusetune {

// This process's executable (/proc/self/exe resolved) with "-codegen" appended: `fusetune` finds
// `fusetune-codegen` beside it, and a copy kept for a comparison, /tmp/fusetune_base, finds
// /tmp/fusetune_base-codegen (its own build's, never another copy's). In an executable whose name
// already ends in "-codegen", that executable.
std::string CodegenBinary();

}  // namespace fusetune
