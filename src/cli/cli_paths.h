// cli_paths.h: where the programs find the files installed beside them.
// defines: cli_default_data, cli_default_cache_dir
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

// The per-user cache directory, for token caches and the LSTM choice when --cache-dir is not
// given: $XDG_CACHE_HOME/shakespeare (an absolute XDG_CACHE_HOME), else $HOME/.cache/shakespeare,
// created when missing. NULL when neither is set or the directory cannot be made or written:
// the library then keeps the cache inside the out-dir (sk_token_cache_default_dir). Writes
// into buf.
const char *cli_default_cache_dir(char *buf, size_t n);

#endif
