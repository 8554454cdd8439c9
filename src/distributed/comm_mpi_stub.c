// comm_mpi_stub.c: stands in for comm_mpi.c in a build without MPI (SHAKESPEARE_MPI off or
// no MPI found): every process is a single process.
#include <stdio.h>

#include "comm_internal.h"

int sk_comm_mpi_built(void) { return 0; }

void sk_comm_mpi_describe(char *buf, size_t n) {
    snprintf(buf, n, "none (built without MPI: scripts/setup.sh installs OpenMPI, then rebuild)");
}

sk_status sk_comm_mpi_create(sk_comm **out, int *argc, char ***argv, sk_error *err) {
    (void)argc, (void)argv;
    *out = NULL;
    return sk_fail(err, SK_ERR_DEVICE, "this build has no MPI support");
}
