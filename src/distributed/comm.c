// comm.c: the communicator's entry points (comm.h), the choice between MPI and a single
// process, and the single-process implementation (rank 0 of 1: collectives are copies).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

// ---- single process ----------------------------------------------------------------------
static sk_status single_allreduce_f32(sk_comm *c, float *buf, size_t n, sk_error *err) {
    (void)c, (void)buf, (void)n, (void)err;
    return SK_OK;
}
static sk_status single_allreduce_f64(sk_comm *c, double *buf, size_t n, sk_error *err) {
    (void)c, (void)buf, (void)n, (void)err;
    return SK_OK;
}
static sk_status single_bcast(sk_comm *c, void *buf, size_t n, int root, sk_error *err) {
    (void)c, (void)buf, (void)n, (void)root, (void)err;
    return SK_OK;
}
static sk_status single_gather(sk_comm *c, const void *send, void *recv, size_t n, int root, sk_error *err) {
    (void)c, (void)root, (void)err;
    if (recv != send) memmove(recv, send, n);
    return SK_OK;
}
static void single_abort(sk_comm *c, int code) {
    (void)c;
    exit(code);
}
static void single_finalize(sk_comm *c) { (void)c; }

static const sk_comm_ops single_ops = {"single", single_allreduce_f32, single_allreduce_f64, single_bcast,
                                       single_gather, single_abort, single_finalize};

sk_comm *sk_comm_single(void) {
    sk_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ops = &single_ops;
    c->rank = 0, c->size = 1, c->local_rank = 0;
    return c;
}

// ---- choice and dispatch -----------------------------------------------------------------
// Set by the launchers of OpenMPI (OMPI_*), MPICH/Hydra and Intel MPI (PMI_*), PMIx (PMIX_RANK).
static int launched_by_mpi(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

sk_status sk_comm_init(sk_comm **out, int *argc, char ***argv, char *notice, size_t notice_size, sk_error *err) {
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    if (launched_by_mpi()) {
        if (sk_comm_mpi_built()) return sk_comm_mpi_create(out, argc, argv, err);
        if (notice && notice_size)
            snprintf(notice, notice_size,
                     "started by an MPI launcher, but this build has no MPI: this process trains alone "
                     "(rebuild with MPI: scripts/setup.sh, then scripts/build.sh)");
    }
    *out = sk_comm_single();
    return *out ? SK_OK : sk_fail(err, SK_ERR_NOMEM, "out of memory");
}

void sk_comm_release_device(sk_comm *c) {
    if (!c || !c->nccl) return;
    sk_nccl_free(c->nccl);
    c->nccl = NULL;
}

void sk_comm_free(sk_comm *c) {
    if (!c) return;
    sk_comm_release_device(c);
    c->ops->finalize(c);
    free(c);
}

int sk_comm_rank(const sk_comm *c) { return c->rank; }
int sk_comm_size(const sk_comm *c) { return c->size; }
int sk_comm_local_rank(const sk_comm *c) { return c->local_rank; }
const char *sk_comm_name(const sk_comm *c) { return c->ops->name; }

sk_status sk_comm_allreduce_sum_f32(sk_comm *c, float *buf, size_t n, int on_device, sk_error *err) {
    // Device memory always goes through NCCL, even for one process (a one-rank communicator:
    // the trainer's data-parallel step on one GPU, which tests that path). Host memory of one
    // process has nothing to add; an MPI job of one rank still goes through MPI.
    return on_device ? sk_nccl_allreduce_sum_f32(c, buf, n, err) : c->ops->allreduce_f32(c, buf, n, err);
}

sk_status sk_comm_allreduce_sum_f64(sk_comm *c, double *buf, size_t n, sk_error *err) {
    return c->ops->allreduce_f64(c, buf, n, err);
}

sk_status sk_comm_bcast(sk_comm *c, void *buf, size_t n, int root, sk_error *err) {
    return c->ops->bcast(c, buf, n, root, err);
}

sk_status sk_comm_gather(sk_comm *c, const void *send, void *recv, size_t n, int root, sk_error *err) {
    return c->ops->gather(c, send, recv, n, root, err);
}

sk_status sk_comm_agree(sk_comm *c, sk_status st, sk_error *err) {
    if (c->size == 1) return st;
    // failed[r]: rank r's status (0 when it succeeded), summed so every rank sees all.
    double *failed = calloc((size_t)c->size, sizeof(double));
    if (!failed) {
        sk_comm_abort(c, 1); // without agreement the ranks would wait on each other forever
        return SK_ERR_NOMEM;
    }
    failed[c->rank] = st != SK_OK ? (double)st : 0.0;
    sk_error local = {{0}};
    sk_status cst = c->ops->allreduce_f64(c, failed, (size_t)c->size, &local);
    int first = -1;
    for (int r = 0; cst == SK_OK && r < c->size && first < 0; r++)
        if (failed[r] != 0.0) first = r;
    sk_status agreed = first < 0 ? SK_OK : (sk_status)(int)failed[first];
    free(failed);
    if (cst != SK_OK) {
        if (err) *err = local;
        return cst;
    }
    if (first < 0) return SK_OK;
    sk_error msg = {{0}};
    if (err && c->rank == first) msg = *err;
    if ((cst = c->ops->bcast(c, msg.msg, sizeof msg.msg, first, &local)) != SK_OK) {
        if (err) *err = local;
        return cst;
    }
    msg.msg[sizeof msg.msg - 1] = '\0';
    if (err && first == 0) *err = msg;
    else if (err) sk_fail(err, agreed, "rank %d: %s", first, msg.msg);
    return agreed;
}

void sk_comm_abort(sk_comm *c, int code) { c->ops->abort(c, code); }
