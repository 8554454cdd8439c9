// cli_paths.h: where the programs find the files installed beside them.
// defines: cli_default_data
#ifndef SK_CLI_PATHS_H
#define SK_CLI_PATHS_H

#include <stddef.h>

// The training text used when --data is not given: the first readable of
//   EXE_DIR/../share/shakespeare/tinyshakespeare.txt   an installed tree (cmake --install)
//   EXE_DIR/../data/tinyshakespeare.txt                 a build directory inside the source tree
//   data/tinyshakespeare.txt                            the working directory (as before)
// where EXE_DIR is the directory of the running program (/proc/self/exe), so an installed
// program finds its corpus from any working directory. Writes into buf, returns buf.
const char *cli_default_data(char *buf, size_t n);

#endif
