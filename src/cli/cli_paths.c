// cli_paths.c: files installed beside the programs (cli_paths.h).
// defines: cli_default_data, cli_default_cache_dir
#include "cli_paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CORPUS "tinyshakespeare.txt"

const char *cli_default_data(char *buf, size_t n) {
    static const char *const beside_exe[] = {"/../share/shakespeare/" CORPUS, "/../data/" CORPUS};
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        for (size_t i = 0; i < sizeof beside_exe / sizeof beside_exe[0]; i++) {
            int k = snprintf(buf, n, "%s%s", exe, beside_exe[i]);
            if (k > 0 && (size_t)k < n && access(buf, R_OK) == 0) return buf;
        }
    }
    snprintf(buf, n, "data/" CORPUS);
    return buf;
}

const char *cli_default_cache_dir(char *buf, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int k = -1;
    if (xdg && xdg[0] == '/') k = snprintf(buf, n, "%s/shakespeare", xdg);
    else if (home && home[0]) k = snprintf(buf, n, "%s/.cache/shakespeare", home);
    if (k <= 0 || (size_t)k >= n) return NULL;
    for (char *p = buf + 1;; p++) { // mkdir -p
        if (*p && *p != '/') continue;
        const char c = *p;
        *p = '\0';
        mkdir(buf, 0777); // an existing one is fine; access() below judges the result
        *p = c;
        if (!c) break;
    }
    return access(buf, W_OK | X_OK) == 0 ? buf : NULL;
}
