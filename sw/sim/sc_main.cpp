// libsystemc's own main() calls sc_main; the binaries with an RTL pod have their own main() (the
// tensorpod tool, GoogleTest's) and never reach this one.
#include <cstdio>

extern "C" int sc_main(int, char*[]) {
  std::fputs("tensorpod: sc_main is not an entry point of this binary\n", stderr);
  return 1;
}
