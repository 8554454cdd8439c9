// comm_mpi.c: the MPI communicator (comm.h) over MPI_COMM_WORLD: host-memory collectives
// with MPI_Allreduce / MPI_Bcast / MPI_Gather, the node-local rank from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). MPI's default error handler (errors are
// fatal) stays: a rank that dies ends the job rather than leaving the others waiting.
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

typedef struct {
    int initialized_here; // we called MPI_Init, so we call MPI_Finalize
} mpi_impl;

// MPI counts are ints: large buffers go in chunks of at most INT_MAX elements.
#define CHUNK ((size_t)INT_MAX)

static void allreduce_sum(void *buf, size_t n, MPI_Datatype type, size_t elem_size) {
    for (size_t off = 0; off < n; off += CHUNK) {
        int k = (int)(n - off < CHUNK ? n - off : CHUNK);
        MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * elem_size, k, type, MPI_SUM, MPI_COMM_WORLD);
    }
}

static sk_status mpi_allreduce_f32(sk_comm *c, float *buf, size_t n, sk_error *err) {
    (void)c, (void)err;
    allreduce_sum(buf, n, MPI_FLOAT, sizeof(float));
    return SK_OK;
}

static sk_status mpi_allreduce_f64(sk_comm *c, double *buf, size_t n, sk_error *err) {
    (void)c, (void)err;
    allreduce_sum(buf, n, MPI_DOUBLE, sizeof(double));
    return SK_OK;
}

static sk_status mpi_bcast(sk_comm *c, void *buf, size_t n, int root, sk_error *err) {
    (void)c, (void)err;
    for (size_t off = 0; off < n; off += CHUNK) {
        int k = (int)(n - off < CHUNK ? n - off : CHUNK);
        MPI_Bcast((char *)buf + off, k, MPI_BYTE, root, MPI_COMM_WORLD);
    }
    return SK_OK;
}

static sk_status mpi_gather(sk_comm *c, const void *send, void *recv, size_t n, int root, sk_error *err) {
    if (n > CHUNK / (size_t)c->size)
        return sk_fail(err, SK_ERR_ARG, "gather of %zu bytes per rank is larger than MPI's int counts allow", n);
    MPI_Gather(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
    return SK_OK;
}

static void mpi_abort(sk_comm *c, int code) {
    (void)c;
    MPI_Abort(MPI_COMM_WORLD, code);
}

static void mpi_finalize(sk_comm *c) {
    mpi_impl *m = c->impl;
    if (m && m->initialized_here) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
    }
    free(m);
    c->impl = NULL;
}

static const sk_comm_ops mpi_ops = {"mpi", mpi_allreduce_f32, mpi_allreduce_f64, mpi_bcast,
                                    mpi_gather, mpi_abort, mpi_finalize};

int sk_comm_mpi_built(void) { return 1; }

void sk_comm_mpi_describe(char *buf, size_t n) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) len = 0; // callable before MPI_Init
    v[len < (int)sizeof v ? len : (int)sizeof v - 1] = '\0';
    v[strcspn(v, ",\n")] = '\0'; // "Open MPI v4.1.4, package: ..." -> its name and version
    snprintf(buf, n, "MPI (%s; mpirun -np N shakespeare-train)", v[0] ? v : "version unknown");
}

sk_status sk_comm_mpi_create(sk_comm **out, int *argc, char ***argv, sk_error *err) {
    *out = NULL;
    sk_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        if (MPI_Init(argc, argv) != MPI_SUCCESS) {
            free(c);
            free(m);
            return sk_fail(err, SK_ERR_DEVICE, "MPI_Init failed");
        }
        m->initialized_here = 1;
    }
    c->ops = &mpi_ops;
    c->impl = m;
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &c->local_rank);
    MPI_Comm_free(&node);
    *out = c;
    return SK_OK;
}
